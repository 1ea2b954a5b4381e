package sensing

import "sync"

// pageHints remember, by sensor id, what the last page read of the
// sensor found of its links and of its flags in force, so that the page
// of a sensor without them, most of them, is read without what they cost
// PostgreSQL: the two statements of its links' readings
// (store.PageRead.Links), set up each time, the statement of its flags,
// and the check of every reading against those that reject readings
// whole (store.PageRead.Unflagged and NoneRejected). They are hints and
// never decide an answer: a sensor linked since its last read finds its
// links in the sensor the same round trip reads, and has them read after
// the page, as a dense source's are; one flagged since has its flags,
// readings and links' readings read again, checked.
type pageHints struct {
	mu      sync.Mutex
	without map[int64]pageHint
}

// pageHint is what a sensor was found without.
type pageHint uint8

const (
	noLinks pageHint = 1 << iota
	noFlags
	noneRejected
)

// maxPageHints bounds the hints; past it they start over.
const maxPageHints = 100_000

// has tells whether the last page read of sensorID found it without
// what h says.
func (p *pageHints) has(sensorID int64, h pageHint) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.without[sensorID]&h == h
}

// saw records whether a read found sensorID without what h says.
func (p *pageHints) saw(sensorID int64, h pageHint, without bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.without == nil || len(p.without) >= maxPageHints {
		p.without = make(map[int64]pageHint)
	}
	switch w := p.without[sensorID]; {
	case without:
		p.without[sensorID] = w | h
	case w&^h == 0:
		delete(p.without, sensorID)
	default:
		p.without[sensorID] = w &^ h
	}
}

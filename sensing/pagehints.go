package sensing

import (
	"math"
	"sync"
	"time"

	"github.com/sensorreadings/readings/store"
)

// pageHints remember, by sensor id, what the last page read of the
// sensor found of its links and of its flags in force, so that the page
// of a sensor without them, most of them, is read without what they cost
// PostgreSQL: the statement of its links' readings
// (store.PageRead.Links), set up each time, the statement of its flags,
// and the check of every reading against those that reject readings
// whole (store.PageRead.Unflagged and NoneRejected). They are hints and
// never decide an answer: a sensor linked since its last read finds its
// links in the sensor the same round trip reads, and has them read after
// the page, as a dense source's are; one flagged since has its flags,
// readings and links' readings read again, checked.
//
// For a sensor with links, they also remember how far apart its readings
// were on its last full page, so that the next page has its links'
// readings read over a guessed span (store.PageRead.LinksSpacing) rather
// than to the page's last reading, which PostgreSQL finds by walking the
// page again. The readings of a page past the span are served as those
// of a dense source are.
//
// They also keep the instances of links' sources as pages last read them,
// and the sources of each linked sensor's links, so that a page names the
// versions it holds and its links' statement sends only the others
// (store.PageRead.KnownSources): the source's row, decoded at every page,
// was a statement of its own. A version is never reused, so an instance
// held is the instance of that version whenever it is read.
type pageHints struct {
	mu      sync.Mutex
	without map[int64]pageHint
	spacing map[int64]time.Duration   // of a linked sensor's readings
	sources map[int64]*store.Instance // by source
	linked  map[int64][]int64         // a linked sensor's sources
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

// linksSpacing is the time between two readings of sensorID, as its
// last full page spaced them, and an eighth more for readings not quite
// regular; 0 when unknown.
func (p *pageHints) linksSpacing(sensorID int64) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.spacing[sensorID]
	return d + min(d/8, math.MaxInt64-d)
}

// sawPage records the span of a full page of n readings of sensorID.
func (p *pageHints) sawPage(sensorID int64, n int, span time.Duration) {
	if n < 2 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spacing == nil || len(p.spacing) >= maxPageHints {
		p.spacing = make(map[int64]time.Duration)
	}
	p.spacing[sensorID] = span.Abs() / time.Duration(n-1)
}

// knownSources returns the instances held of the sources of sensorID's
// links, those of of when it is given, else those its last page read; nil
// when none is held.
func (p *pageHints) knownSources(sensorID int64, of *store.Instance) map[int64]*store.Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	var known map[int64]*store.Instance
	add := func(id int64) {
		if inst, ok := p.sources[id]; ok {
			if known == nil {
				known = make(map[int64]*store.Instance)
			}
			known[id] = inst
		}
	}
	if of == nil {
		for _, id := range p.linked[sensorID] {
			add(id)
		}
		return known
	}
	for _, in := range of.Inputs {
		if in.Link != nil {
			add(in.Link.SensorID)
		}
	}
	return known
}

// sawSources records the sources of sensorID's links as a page read them.
func (p *pageHints) sawSources(sensorID int64, links []store.PageLink) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sources == nil || len(p.sources) >= maxPageHints {
		p.sources = make(map[int64]*store.Instance)
	}
	if p.linked == nil || len(p.linked) >= maxPageHints {
		p.linked = make(map[int64][]int64)
	}
	for _, l := range links {
		if !l.Known && l.Source != nil {
			p.sources[l.SensorID] = l.Source
		}
	}
	old := p.linked[sensorID]
	same := len(old) == len(links)
	for i := 0; same && i < len(links); i++ {
		same = old[i] == links[i].SensorID
	}
	if !same {
		ids := make([]int64, len(links))
		for i, l := range links {
			ids[i] = l.SensorID
		}
		p.linked[sensorID] = ids
	}
}

package sensing

import "sync"

// linkHints remembers, by sensor id, whether the last page read of the
// sensor found it linked, so that the page of a sensor without links,
// most of them, is read without the two statements of its links'
// readings (store.PageRead.Links), which cost PostgreSQL as much to set
// up as a sensor's flags and key checks together. It is a hint and
// never decides an answer: a sensor linked since its last read is read
// unlinked, finds its links in the sensor the same round trip reads,
// and has them read after the page, as a dense source's are.
type linkHints struct {
	mu       sync.Mutex
	unlinked map[int64]bool
}

// maxLinkHints bounds the hints; past it they start over.
const maxLinkHints = 100_000

// mayBeLinked tells whether sensorID was linked, or not yet read, when a
// page of it was read last.
func (h *linkHints) mayBeLinked(sensorID int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.unlinked[sensorID]
}

// saw records whether a read found sensorID linked.
func (h *linkHints) saw(sensorID int64, linked bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case linked:
		delete(h.unlinked, sensorID)
	case h.unlinked == nil || len(h.unlinked) >= maxLinkHints:
		h.unlinked = map[int64]bool{sensorID: true}
	default:
		h.unlinked[sensorID] = true
	}
}

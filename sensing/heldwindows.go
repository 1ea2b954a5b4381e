package sensing

import (
	"math/rand/v2"
	"sync"

	"github.com/sensorreadings/readings/store"
)

// heldWindows hold in memory, by sensor and rule, what this service's
// last committed write of each sensor left its rate rules keeping
// (store.AlarmRule.KeptWindow), under the stamp that write drew and
// stored with the rule (alarm_rules.rate_kept_stamp). The window is kept
// nowhere else: the store keeps only its stamp, and a write that does not
// hold the window under the stored stamp reads it back from the readings
// (loadRates), as after an edit that forgets it. So a write of a sensor
// whose last write came through this service costs PostgreSQL nothing
// for its windows: no part of them is written, and the rules' row is
// written only when a state changes.
//
// The stamp says whose window is right: a stamp is drawn anew (63 random
// bits) by every write that keeps a window it did not take from the
// holds, and every other change of what is kept (an edit that forgets
// it, a rule's update) clears the stamp, so what another instance, a
// write rolled back or an edit left is read back. A write takes the
// windows it uses out of the holds (take), and gives back those it leaves
// only once its transaction has committed (put): a write that fails
// leaves nothing held, and the next one reads the readings. A write that
// took a window keeps its stamp, since no one else holds it: another
// write of the sensor that comes between its commit and its put finds
// nothing to take, and draws a new stamp, which the put of the first
// then does not match.
type heldWindows struct {
	mu      sync.Mutex
	sensors map[int64]map[int64]heldWindow // sensor -> rule -> window
	values  int                            // values held, which maxHeldValues bounds
}

// heldWindow is what a rule keeps, as its write left it.
type heldWindow struct {
	stamp  int64
	window *store.RateWindow
}

// maxHeldValues bounds the values held (16 bytes each): 64 MB, some 4,000
// rules of an hour's window a second apart. Past it the holds start over.
const maxHeldValues = 1 << 22

// take hands each of rules the window held under its stored stamp,
// which it takes out of the holds: what it keeps is then that window
// (KeptWindow). A rule whose window is not held keeps nothing, and its
// write reads its window back from the readings.
func (h *heldWindows) take(sensorID int64, rules []store.AlarmRule) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := h.sensors[sensorID]
	for i := range rules {
		r := &rules[i]
		w, ok := held[r.ID]
		if !ok || r.RateStamp == 0 || w.stamp != r.RateStamp {
			continue
		}
		delete(held, r.ID)
		h.values -= len(w.window.Micros)
		r.KeptWindow = w.window
	}
}

// put holds what rules keep after a write of the sensor that committed,
// in place of what was held, which the write took or did not use.
func (h *heldWindows) put(sensorID int64, rules []store.AlarmRule) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.sensors[sensorID] {
		h.values -= len(w.window.Micros)
	}
	delete(h.sensors, sensorID)
	held := map[int64]heldWindow{}
	n := 0
	for _, r := range rules {
		if r.KeptWindow != nil && r.RateStamp != 0 {
			held[r.ID] = heldWindow{stamp: r.RateStamp, window: r.KeptWindow}
			n += len(r.KeptWindow.Micros)
		}
	}
	if len(held) == 0 {
		return
	}
	if h.sensors == nil || h.values+n > maxHeldValues {
		h.sensors, h.values = map[int64]map[int64]heldWindow{}, 0
	}
	h.sensors[sensorID] = held
	h.values += n
}

// newStamp is a stamp for what a write keeps: not 0, which is none.
func newStamp() int64 {
	for {
		if s := rand.Int64(); s != 0 {
			return s
		}
	}
}

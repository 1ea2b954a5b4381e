package sensing

import (
	"math/rand/v2"
	"sync"

	"github.com/sensorreadings/readings/store"
)

// heldWindows hold in memory, by sensor and rule, what this service's
// last committed write of each sensor left its rate rules keeping
// (store.AlarmRule.KeptWindow), under the stamp that write drew and
// stored with it (alarm_rules.rate_kept_stamp). The next write of the
// sensor names the stamps it holds to the rules' read, in the lock's
// round trip, which sends neither the head nor the parts of a rule whose
// stored stamp is one of them, and the write starts from the window held
// instead of parsing them: about 18 kB a batch of 1,000 to an hour's rule
// a second apart, read by PostgreSQL from three parts, sent and decoded.
//
// The database stays the truth: a stamp is drawn anew (63 random bits)
// by every write that changes what a rule keeps, and every other change
// of it (an edit that forgets it, a rule's update) clears the stamp, so
// what another instance, a write rolled back or an edit left is read and
// parsed as before. A write takes the windows it uses out of the holds
// (take), and gives back those it leaves only once its transaction has
// committed (put): a write that fails leaves nothing held, and the next
// one reads what is stored.
type heldWindows struct {
	mu      sync.Mutex
	sensors map[int64]map[int64]heldWindow // sensor -> rule -> window
	values  int                            // values held, which maxHeldValues bounds
}

// heldWindow is what a rule keeps, as its write stored it.
type heldWindow struct {
	stamp   int64
	head    []byte // store.AlarmRule.RateKept
	partsTo int64  // store.AlarmRule.RatePartsTo
	window  *store.RateWindow
}

// maxHeldValues bounds the values held (16 bytes each): 64 MB, some 4,000
// rules of an hour's window a second apart. Past it the holds start over.
const maxHeldValues = 1 << 22

// stamps are the stamps held of the sensor's rules.
func (h *heldWindows) stamps(sensorID int64) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	rules := h.sensors[sensorID]
	out := make([]int64, 0, len(rules))
	for _, w := range rules {
		out = append(out, w.stamp)
	}
	return out
}

// take hands each of rules that the read left out (RateHeld) the window
// held under its stamp, which it takes out of the holds: what it keeps is
// then that window. A rule whose window is not held (another write of the
// sensor took it, and failed) keeps nothing, and its write reads its
// window back from the readings.
func (h *heldWindows) take(sensorID int64, rules []store.AlarmRule) {
	h.mu.Lock()
	defer h.mu.Unlock()
	held := h.sensors[sensorID]
	for i := range rules {
		r := &rules[i]
		if !r.RateHeld {
			continue
		}
		w, ok := held[r.ID]
		if !ok || w.stamp != r.RateStamp {
			continue
		}
		delete(held, r.ID)
		h.values -= len(w.window.Micros)
		r.RateKept, r.RatePartsTo, r.KeptWindow = w.head, w.partsTo, w.window
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
		if r.KeptWindow != nil && r.RateKept != nil && r.RateStamp != 0 {
			held[r.ID] = heldWindow{stamp: r.RateStamp, head: r.RateKept, partsTo: r.RatePartsTo, window: r.KeptWindow}
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

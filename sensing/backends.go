package sensing

import (
	"sync"
	"time"
)

// backendReads remember, for each PostgreSQL backend that read half of a
// long aggregate's readings, which sensor's and which instant its half
// was around, so that the next read of the same range gives each of its
// two connections the half its backend read before. A backend's first
// read of a shared buffer costs it a minor fault of the shared memory
// (some 2,200 a half of 13e, 500,000 readings, without huge pages), 0.35–
// 0.45 s of CPU a half more than a backend that has read those buffers
// before: which connection the pool hands each half decided that, and
// the two halves' backends swapped after a maintainer's round had
// returned its connections in the other order. A hint that never decides
// an answer: each half is read whole wherever it is read.
type backendReads struct {
	mu   sync.Mutex
	last map[uint32]backendRead // by backend process id
}

// backendRead is the middle of the half a backend read last, of sensor's
// readings.
type backendRead struct {
	sensor int64
	mid    time.Time
}

// maxBackendReads bounds the backends remembered: a pool's connections
// are replaced now and then, and the process ids of those gone are
// forgotten all at once past it.
const maxBackendReads = 256

// note records that backend pid read sp of the sensor's readings.
func (b *backendReads) note(pid uint32, sensor int64, sp spans) {
	if b == nil || len(sp.from) == 0 {
		return
	}
	from, to := sp.from[0], sp.to[len(sp.to)-1]
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil || len(b.last) >= maxBackendReads {
		b.last = map[uint32]backendRead{}
	}
	b.last[pid] = backendRead{sensor: sensor, mid: from.Add(to.Sub(from) / 2)}
}

// swap says whether, of two halves of the sensor's readings cut at cut,
// the first is better read by backend side and the second by main, which
// would otherwise read the first: when either read the other's half last,
// and the other did not read its own.
func (b *backendReads) swap(main, side uint32, sensor int64, cut time.Time) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// half is 0 for a backend that read the first half last, 1 the second,
	// -1 neither of these readings.
	half := func(pid uint32) int {
		r, ok := b.last[pid]
		switch {
		case !ok || r.sensor != sensor:
			return -1
		case r.mid.Before(cut):
			return 0
		}
		return 1
	}
	m, s := half(main), half(side)
	return (m == 1 && s != 1) || (s == 0 && m != 0)
}

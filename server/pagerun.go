package server

import (
	"slices"
	"sync"
	"time"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// A JSON page of readings is encoded on two cores. PostgreSQL sends a
// page's rows in about half the time the service takes to receive them
// and encode them on one core, so the second core idled while the
// service encoded alone (docs/performance.md, issue 27's row 6b). The
// rows' reader copies the readings, with their outputs computed, in runs
// of pageRunLen, and hands each full run to a goroutine of the page's
// that encodes the runs in order into the page's buffer while the next
// rows arrive. Once the last row is read, the reader encodes the last
// run into a buffer of its own and takes the runs not yet encoded from
// the back of the queue, as the goroutine takes them from the front; its
// runs follow the goroutine's in the page, so the page is byte for byte
// what one encoder gives, and goes out in one write (writeWhole).

// pageRunLen is how many readings a JSON page copies before handing them
// on: a page of 1,000 is seven runs and a last of 104, and one of fewer
// than pageRunLen is encoded by the reader alone, without a goroutine.
const pageRunLen = 128

// pageRun is readings copied for an encoder, since the reading a sink is
// given is the next row's too.
type pageRun struct {
	start   int // the page's readings before the run's first
	times   []time.Time
	ends    []int // of each reading's ids and values in ids and vals
	ids     []int64
	vals    []float64
	withOut bool      // the readings' outputs are asked for
	outIDs  []int64   // their ids
	outs    []float64 // len(outIDs) a reading, from outputValues
	has     []bool
	marks   [][]sensing.Mark
	b       []byte // the run encoded, when the reader encodes it
}

var pageRuns = sync.Pool{New: func() any { return new(pageRun) }}

// newPageRun is an empty run whose first reading is the page's start-th.
func newPageRun(start int) *pageRun {
	run := pageRuns.Get().(*pageRun)
	run.start = start
	return run
}

// add copies x, and with outputs computes x's outputs and copies them.
func (run *pageRun) add(x *store.Reading, outputs *sensing.Outputs, marks []sensing.Mark) {
	run.times = append(run.times, x.Time)
	run.ids = append(run.ids, x.InputIDs...)
	run.vals = append(run.vals, x.Values...)
	run.ends = append(run.ends, len(run.ids))
	if outputs != nil {
		outputs.Compute(x)
		run.withOut, run.outIDs = true, outputs.IDs()
		run.outs, run.has = outputValues(outputs, run.outs, run.has)
	}
	if len(marks) > 0 {
		marks = slices.Clone(marks)
	}
	run.marks = append(run.marks, marks)
}

func (run *pageRun) len() int { return len(run.times) }

// encode appends the run's readings to b, each after a comma but the
// page's first.
func (run *pageRun) encode(b []byte, e *readingEncoder) []byte {
	var r store.Reading
	n, start := len(run.outIDs), 0
	for i, end := range run.ends {
		if run.start+i > 0 {
			b = append(b, ',')
		}
		r.Time, r.InputIDs, r.Values = run.times[i], run.ids[start:end:end], run.vals[start:end:end]
		b = e.appendInputs(b, &r)
		if run.withOut {
			b = e.appendOutputValues(b, run.outIDs, run.outs[i*n:(i+1)*n], run.has[i*n:(i+1)*n])
		}
		b = appendMarks(b, run.marks[i], e.names)
		b = append(b, '}')
		start = end
	}
	return b
}

// free gives the run back for another page's, unless its encoding grew
// past what a page of the most readings asks (a page's marks can be
// long).
func (run *pageRun) free() {
	clear(run.marks)
	run.times, run.ends, run.ids, run.vals = run.times[:0], run.ends[:0], run.ids[:0], run.vals[:0]
	run.withOut, run.outIDs, run.outs, run.has, run.marks, run.b = false, nil, run.outs[:0], run.has[:0], run.marks[:0], run.b[:0]
	if cap(run.b) <= 1<<20 {
		pageRuns.Put(run)
	}
}

// pageEncoder is a page's second goroutine and the runs handed on to it.
type pageEncoder struct {
	mu      sync.Mutex
	more    sync.Cond  // on mu: a run was handed on, or closed
	queue   []*pageRun // handed on and not taken, in the page's order
	closed  bool       // no run comes any more
	started bool       // the goroutine runs, or ran
	done    chan struct{}
	enc     readingEncoder
}

// startPageEncoder starts a page's encoder goroutine; tests hold it back.
var startPageEncoder = func(encode func()) { go encode() }

// handOn gives the run being filled to the page's encoder goroutine,
// started with the first.
func (p *readingsPage) handOn() {
	w := p.work
	if w == nil {
		w = &pageEncoder{done: make(chan struct{})}
		w.more.L = &w.mu
		w.enc.reset(p.sensorID, p.names)
		p.work = w
	}
	w.mu.Lock()
	w.queue = append(w.queue, p.run)
	w.mu.Unlock()
	w.more.Signal()
	p.run = nil
}

// encodeRuns is the page's encoder goroutine: it encodes the runs from
// the queue's front into the page's buffer until the queue is closed
// and empty.
func (p *readingsPage) encodeRuns() {
	w := p.work
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.more.Wait()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		run := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		p.buf.Write(run.encode(p.buf.AvailableBuffer(), &w.enc))
	}
}

// lastRun takes the run at the queue's back, or nil when it is empty.
func (w *pageEncoder) lastRun() *pageRun {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return nil
	}
	run := w.queue[len(w.queue)-1]
	w.queue = w.queue[:len(w.queue)-1]
	return run
}

// close says no run comes any more; with drop, the runs not taken are
// not to be encoded.
func (w *pageEncoder) close(drop bool) {
	w.mu.Lock()
	w.closed = true
	if drop {
		w.queue = nil
	}
	w.mu.Unlock()
	w.more.Broadcast()
}

// encodeLast encodes the page's readings left once the last is read: the
// run being filled and, with the encoder goroutine, the runs it has not
// taken, shared with it. The page's buffer is then whole but for its
// closing bracket, and the page's alone.
func (p *readingsPage) encodeLast() {
	w := p.work
	if w == nil {
		if p.run != nil {
			p.buf.Write(p.run.encode(p.buf.AvailableBuffer(), &p.enc))
		}
		return
	}
	w.close(false)
	w.started = true
	startPageEncoder(p.encodeRuns)
	var mine []*pageRun // the runs the reader encodes, in the page's order
	if p.run != nil {
		p.run.b = p.run.encode(p.run.b, &p.enc)
		mine = append(mine, p.run)
	}
	for run := w.lastRun(); run != nil; run = w.lastRun() {
		run.b = run.encode(run.b, &p.enc)
		mine = slices.Insert(mine, 0, run)
	}
	<-w.done
	p.work = nil
	for _, run := range mine {
		p.buf.Write(run.b)
	}
}

// stop ends the page's encoder goroutine, if it runs, once it has
// encoded the run it holds: the runs it has not taken are dropped. After
// it no goroutine of the page's is left; a page given up mid-way (a
// failed read, a client gone) stops it so, and so does the handler
// whatever ends it.
func (p *readingsPage) stop() {
	if p.work == nil || !p.work.started {
		p.work = nil
		return
	}
	p.work.close(true)
	<-p.work.done
	p.work = nil
}

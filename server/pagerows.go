package server

import (
	"slices"
	"sync"
	"time"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// A page's readings encoded on two cores.
//
// PostgreSQL mostly sends a page's rows in one burst once its statement
// has found them, and the service's work on them (decoding, computing the
// outputs, formatting some 15,000 numbers) came after it, on one core,
// while the request's client and PostgreSQL waited (docs/performance.md,
// "A page's timeline"). So the rows are copied as they arrive, with their
// outputs computed, in runs of pageRunRows, and each full run is handed to
// a second goroutine that encodes it while the next rows are received;
// once the last row is in, the request's goroutine encodes the runs left
// beside it. The runs' encodings are joined in order, byte for byte what
// one encoder writes (TestPageRunsEncoding).

// pageRunRows is the readings of a run: enough that handing one over
// costs little beside encoding it, few enough that the runs left when the
// last row arrives are shared between both goroutines.
const pageRunRows = 256

// pageRun is a run of a page's readings, copied with their outputs'
// values, and then its encoding.
type pageRun struct {
	first bool // holds the page's first reading: no comma before it
	rows  []pageRow
	ids   []int64   // the rows' input ids, one after the other
	vals  []float64 // and their values
	outs  []float64 // the rows' outputs' values, one after the other
	has   []bool    // and whether each has one
	out   []byte    // the encoding, once encoded
}

// pageRow is a reading of a run: its instant, where its inputs and
// outputs end in the run's slices, its outputs' ids (nil: none asked
// for) and its marks.
type pageRow struct {
	time    time.Time
	inEnd   int
	outEnd  int
	outIDs  []int64
	outputs bool
	marks   []sensing.Mark
}

var pageRuns = sync.Pool{New: func() any { return new(pageRun) }}

func newPageRun(first bool) *pageRun {
	run := pageRuns.Get().(*pageRun)
	run.first, run.rows, run.ids, run.vals, run.outs, run.has, run.out =
		first, run.rows[:0], run.ids[:0], run.vals[:0], run.outs[:0], run.has[:0], run.out[:0]
	return run
}

// add copies r, with its outputs computed unless outputs is nil, and its
// marks, which are copied when there are any.
func (run *pageRun) add(r *store.Reading, outputs *sensing.Outputs, marks []sensing.Mark) {
	run.ids = append(run.ids, r.InputIDs...)
	run.vals = append(run.vals, r.Values...)
	row := pageRow{time: r.Time, inEnd: len(run.ids), outputs: outputs != nil}
	if outputs != nil {
		outputs.Compute(r)
		row.outIDs = outputs.IDs()
		for k := range row.outIDs {
			v, ok := outputs.Value(k)
			run.outs, run.has = append(run.outs, v), append(run.has, ok)
		}
	}
	row.outEnd = len(run.outs)
	if len(marks) > 0 {
		row.marks = append([]sensing.Mark(nil), marks...)
	}
	run.rows = append(run.rows, row)
}

// encode encodes the run's readings with e, each but the page's first
// after a comma.
func (run *pageRun) encode(e *readingEncoder) {
	// Room for the run at once, rather than a copy at every doubling: a
	// value takes some 25 bytes with its key, a reading some 80 more.
	b := slices.Grow(run.out[:0], len(run.rows)*96+(len(run.vals)+len(run.outs))*26)
	var (
		r       store.Reading
		outs    rowOutputs
		in, out int // where the row's inputs and outputs start
	)
	for i := range run.rows {
		row := &run.rows[i]
		if i > 0 || !run.first {
			b = append(b, ',')
		}
		r.Time, r.InputIDs, r.Values = row.time, run.ids[in:row.inEnd], run.vals[in:row.inEnd]
		if row.outputs {
			outs = rowOutputs{ids: row.outIDs, vals: run.outs[out:row.outEnd], has: run.has[out:row.outEnd]}
			b = e.appendComputed(b, &r, &outs, row.marks)
		} else {
			b = e.appendComputed(b, &r, nil, row.marks)
		}
		in, out = row.inEnd, row.outEnd
	}
	run.out = b
}

// rowOutputs are a row's outputs as its run holds them.
type rowOutputs struct {
	ids  []int64
	vals []float64
	has  []bool
}

func (o *rowOutputs) IDs() []int64                { return o.ids }
func (o *rowOutputs) Value(k int) (float64, bool) { return o.vals[k], o.has[k] }

// pageRuns encodes a page's runs, those the request's goroutine hands
// over on a second goroutine.
type pageEncoding struct {
	runs    []*pageRun // in the page's order
	filling *pageRun
	work    chan *pageRun // to the second goroutine; nil until a run is full
	done    sync.WaitGroup
	second  readingEncoder
}

// add adds r to the run being filled, and hands it over once full; the
// second goroutine starts with the first full run, its encoder reset as
// e (sensorID, names).
func (p *pageEncoding) add(r *store.Reading, outputs *sensing.Outputs, marks []sensing.Mark, sensorID int64, names keyNames, e *readingEncoder) {
	if p.filling == nil {
		p.filling = newPageRun(len(p.runs) == 0)
	}
	p.filling.add(r, outputs, marks)
	if len(p.filling.rows) < pageRunRows {
		return
	}
	run := p.filling
	p.runs, p.filling = append(p.runs, run), nil
	if p.work == nil {
		p.work = make(chan *pageRun, 64)
		p.second.reset(sensorID, names)
		p.done.Add(1)
		go func() {
			defer p.done.Done()
			for run := range p.work {
				run.encode(&p.second)
			}
		}()
	}
	select {
	case p.work <- run:
	default:
		// The second goroutine is that far behind: this one encodes.
		run.encode(e)
	}
}

// finish encodes what is left with e, beside the second goroutine, and
// returns the runs, encoded, in order.
func (p *pageEncoding) finish(e *readingEncoder) []*pageRun {
	if p.filling != nil {
		p.filling.encode(e)
		p.runs, p.filling = append(p.runs, p.filling), nil
	}
	if p.work != nil {
		close(p.work)
		for run := range p.work {
			run.encode(e)
		}
		p.done.Wait()
		p.work = nil
	}
	return p.runs
}

// release stops the second goroutine, if it runs, and returns the runs to
// their pool.
func (p *pageEncoding) release() {
	if p.work != nil {
		close(p.work)
		for range p.work {
		}
		p.done.Wait()
		p.work = nil
	}
	if p.filling != nil {
		p.runs = append(p.runs, p.filling)
		p.filling = nil
	}
	for _, run := range p.runs {
		if cap(run.out) <= 1<<20 {
			pageRuns.Put(run)
		}
	}
	p.runs = p.runs[:0]
}

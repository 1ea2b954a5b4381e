package server

import (
	"testing"
	"time"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// feedPage gives p n readings as the store does, in one reused Reading:
// their inputs change from one to the next, some have marks.
func feedPage(t *testing.T, p *readingsPage, n int, outputs *sensing.Outputs) {
	t.Helper()
	var r store.Reading
	for i := range n {
		r.Time = time.UnixMicro(1_714_564_800_000_000 + int64(i)*1_000_003).UTC()
		r.InputIDs, r.Values = r.InputIDs[:0], r.Values[:0]
		for k := range 1 + i%4 {
			r.InputIDs = append(r.InputIDs, int64(101+k))
			r.Values = append(r.Values, float64(i)*0.1+float64(k)/3)
		}
		var marks []sensing.Mark
		if i%7 == 0 {
			marks = []sensing.Mark{{InputID: 101, Flag: "suspect"}}
		}
		p.Marks(marks)
		if err := p.Reading(&r, outputs); err != nil {
			t.Fatal(err)
		}
	}
}

// onePageEncoder is the page of feedPage's n readings as one encoder
// writes it, reading after reading.
func onePageEncoder(t *testing.T, n int, outputs *sensing.Outputs) string {
	t.Helper()
	kept := newReadingsPage(12, false, true) // CSV keeps the readings as given
	feedPage(t, kept, n, nil)
	defer kept.release()
	var e readingEncoder
	e.reset(12, nil)
	want := []byte{'['}
	for i := range kept.csv {
		if i > 0 {
			want = append(want, ',')
		}
		want = e.append(want, &kept.csv[i], outputs, kept.csvMarks[i])
	}
	return string(append(want, "]\n"...))
}

// TestPageInRunsEquivalence is an equivalence test: a JSON page encoded
// in runs on two goroutines is byte for byte the page one encoder writes
// reading after reading, for pages of no run, of one, of whole runs and of
// a last partial one, with and without outputs, whoever encodes which
// runs: the page's goroutine none (the reader takes every run back from
// the queue), or as they run (under -race, many times).
// It fails when the reader's runs are joined in the order it took them.
func TestPageInRunsEquivalence(t *testing.T) {
	schedules := []struct {
		name string
		// before is called once the readings are given and before the
		// page is finished, with the page's goroutine's gate.
		before func(t *testing.T, p *readingsPage, gate chan struct{})
		// during is called while the page is finished, with its goroutine.
		during func(t *testing.T, w *pageEncoder, gate chan struct{})
	}{
		{name: "AsTheyRun", before: func(_ *testing.T, _ *readingsPage, gate chan struct{}) { close(gate) }},
		{
			name: "ReaderTakesAll",
			during: func(t *testing.T, w *pageEncoder, gate chan struct{}) {
				waitQueue(t, w, true)
				close(gate)
			},
		},
	}
	for _, s := range schedules {
		t.Run(s.name, func(t *testing.T) {
			gate := make(chan struct{})
			start := startPageEncoder
			t.Cleanup(func() { startPageEncoder = start })
			startPageEncoder = func(encode func()) {
				gate := gate // this page's
				go func() {
					<-gate
					encode()
				}()
			}
			for _, outputs := range []*sensing.Outputs{nil, {}} {
				for _, n := range []int{0, 1, pageRunLen - 1, pageRunLen, pageRunLen + 1, 3 * pageRunLen, 1000} {
					want := onePageEncoder(t, n, outputs)
					for range 20 {
						gate = make(chan struct{})
						p := newReadingsPage(12, false, false)
						if err := p.Sensor(store.Sensor{ID: 12}, outputs); err != nil {
							t.Fatal(err)
						}
						feedPage(t, p, n, outputs)
						if p.work == nil {
							close(gate) // no goroutine: nothing to hold
						} else if s.before != nil {
							s.before(t, p, gate)
						}
						w := p.work
						finished := make(chan struct{})
						go func() {
							defer close(finished)
							p.finish("")
						}()
						if w != nil && s.during != nil {
							s.during(t, w, gate)
						}
						<-finished
						if got := p.buf.String(); got != want {
							t.Fatalf("page of %d readings, outputs %v:\n%s\nwant\n%s", n, outputs != nil, got, want)
						}
						p.release()
					}
				}
			}
		})
	}
}

// waitQueue waits until the queue of a page's goroutine is empty and,
// with closed, closed.
func waitQueue(t *testing.T, w *pageEncoder, closed bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		w.mu.Lock()
		empty := len(w.queue) == 0 && (w.closed || !closed)
		w.mu.Unlock()
		if empty {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the page's queue is not emptied")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestPageGivenUpStopsItsGoroutine checks that a page given up mid-way
// (a read that failed, a client gone) leaves no goroutine when released:
// its goroutine has returned and the runs it had not taken are dropped.
// It fails when release does not stop the goroutine.
func TestPageGivenUpStopsItsGoroutine(t *testing.T) {
	p := newReadingsPage(12, false, false)
	if err := p.Sensor(store.Sensor{ID: 12}, &sensing.Outputs{}); err != nil {
		t.Fatal(err)
	}
	feedPage(t, p, 5*pageRunLen+3, &sensing.Outputs{})
	if p.work == nil {
		t.Fatal("no goroutine started")
	}
	p.release()
	if p.work != nil {
		t.Error("the page's goroutine is kept after the page was released")
	}
}

package server

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// FuzzAppendJSONString checks the names' encoder against encoding/json,
// byte for byte, whatever the string.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "S001", "bench piezometer", `a "quoted" name`, `back\slash`, "<b>&amp;</b>", "tab\there",
		"line\u2028sep", "Zürich", "\xff\xfe", "\x7f", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJSONString([]byte("x"), s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(got), "x"+string(want); got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

// feedPage gives p n readings whose inputs change from one to the next,
// some with marks, to feed a page as the store gives them: in one
// reused Reading.
func feedPage(t *testing.T, p *readingsPage, n int) {
	t.Helper()
	var r store.Reading
	outputs := &sensing.Outputs{}
	for i := range n {
		r.Time = time.UnixMicro(1_714_564_800_000_000 + int64(i)*1_000_003).UTC()
		r.InputIDs, r.Values = r.InputIDs[:0], r.Values[:0]
		for k := range 1 + i%4 {
			r.InputIDs = append(r.InputIDs, int64(101+k))
			r.Values = append(r.Values, float64(i)*0.1+float64(k))
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

// TestPageEncodedInRuns checks that a page whose readings are encoded by
// its encoder goroutine, run after run, is byte for byte the page encoded
// reading after reading, for pages of one run, of whole runs and of a
// last partial run.
func TestPageEncodedInRuns(t *testing.T) {
	for _, n := range []int{0, 1, pageRunLen - 1, pageRunLen, pageRunLen + 1, 3 * pageRunLen, 1000} {
		p := newReadingsPage(12, false, false)
		if err := p.Sensor(store.Sensor{ID: 12}, &sensing.Outputs{}); err != nil {
			t.Fatal(err)
		}
		feedPage(t, p, n)
		got := string(p.finish("").buf.Bytes())
		p.release()

		var (
			enc  readingEncoder
			want = []byte{'['}
			r    store.Reading
		)
		enc.reset(12, nil)
		feed := newReadingsPage(12, false, true) // CSV keeps the readings as given
		feedPage(t, feed, n)
		for i := range feed.csv {
			if i > 0 {
				want = append(want, ',')
			}
			r = feed.csv[i]
			want = enc.append(want, &r, &sensing.Outputs{}, feed.csvMarks[i])
		}
		feed.release()
		want = append(want, "]\n"...)
		if got != string(want) {
			t.Errorf("page of %d readings:\n%s\nwant\n%s", n, got, want)
		}
	}
}

// TestPageEncoderStops checks that a page given up before it is whole (a
// read failing mid-page) leaves no encoder goroutine behind.
func TestPageEncoderStops(t *testing.T) {
	before := runtime.NumGoroutine()
	p := newReadingsPage(12, false, false)
	if err := p.Sensor(store.Sensor{ID: 12}, &sensing.Outputs{}); err != nil {
		t.Fatal(err)
	}
	feedPage(t, p, 3*pageRunLen+5)
	if p.runs == nil {
		t.Fatal("no encoder started")
	}
	p.release()
	if got := runtime.NumGoroutine(); got > before {
		t.Errorf("%d goroutines after the page was released, %d before", got, before)
	}
}

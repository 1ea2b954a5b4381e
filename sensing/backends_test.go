package sensing

import (
	"testing"
	"time"
)

// TestBackendReadsSwap holds which half of a long read each of its two
// backends is given: the half it read last, where either read one of
// these halves of the sensor's readings, and first on the request's own
// connection otherwise.
func TestBackendReadsSwap(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2025, 1, d, 0, 0, 0, 0, time.UTC) }
	half := func(from, to int) spans { return spans{from: []time.Time{day(from)}, to: []time.Time{day(to)}} }
	first, second := half(1, 15), half(15, 29)
	const sensor, other = 7, 8
	const main, side, fresh = 101, 102, 103
	tests := []struct {
		name  string
		notes func(b *backendReads)
		swap  bool
	}{
		{"nothing read", func(*backendReads) {}, false},
		{"each its own half before", func(b *backendReads) {
			b.note(main, sensor, first)
			b.note(side, sensor, second)
		}, false},
		{"each the other's half before", func(b *backendReads) {
			b.note(main, sensor, second)
			b.note(side, sensor, first)
		}, true},
		{"main the second, side new", func(b *backendReads) { b.note(main, sensor, second) }, true},
		{"side the first, main new", func(b *backendReads) { b.note(side, sensor, first) }, true},
		{"main the first, side new", func(b *backendReads) { b.note(main, sensor, first) }, false},
		{"side the second, main new", func(b *backendReads) { b.note(side, sensor, second) }, false},
		{"both the second: main keeps the first", func(b *backendReads) {
			b.note(main, sensor, second)
			b.note(side, sensor, second)
		}, false},
		{"both the first: main keeps it", func(b *backendReads) {
			b.note(main, sensor, first)
			b.note(side, sensor, first)
		}, false},
		{"another sensor's halves", func(b *backendReads) {
			b.note(main, other, second)
			b.note(side, other, first)
		}, false},
		{"read since by another backend's turn", func(b *backendReads) {
			b.note(main, sensor, second)
			b.note(fresh, sensor, first)
			b.note(main, sensor, first)
		}, false},
		{"a half a little off the cut", func(b *backendReads) {
			b.note(main, sensor, half(14, 28))
			b.note(side, sensor, half(2, 14))
		}, true},
	}
	for _, tt := range tests {
		b := &backendReads{}
		tt.notes(b)
		if got := b.swap(main, side, sensor, second.from[0]); got != tt.swap {
			t.Errorf("%s: swap = %v, want %v", tt.name, got, tt.swap)
		}
		a := &aggregation{backends: b}
		mine, theirs := a.sides(main, side, sensor, first, second)
		if want := map[bool]spans{false: first, true: second}[tt.swap]; mine.from[0] != want.from[0] || theirs.from[0] == mine.from[0] {
			t.Errorf("%s: sides = %v, %v, want main on %v", tt.name, mine.from, theirs.from, want.from)
		}
	}
	var none *backendReads
	none.note(main, sensor, first)
	if none.swap(main, side, sensor, second.from[0]) {
		t.Errorf("swap without memory = true, want false")
	}
}

// TestBackendReadsForget holds the memory to maxBackendReads backends.
func TestBackendReadsForget(t *testing.T) {
	b := &backendReads{}
	sp := spans{from: []time.Time{time.Unix(0, 0)}, to: []time.Time{time.Unix(86400, 0)}}
	for pid := range uint32(3 * maxBackendReads) {
		b.note(pid, 1, sp)
		if len(b.last) > maxBackendReads {
			t.Fatalf("%d backends remembered, want at most %d", len(b.last), maxBackendReads)
		}
	}
}

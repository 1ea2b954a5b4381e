package tokenuse

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"
)

// touches is a Store that keeps what it was asked to write, and fails
// while down.
type touches struct {
	down    bool
	written map[int64]time.Time
}

func (s *touches) TouchTokens(_ context.Context, ids []int64, at time.Time) error {
	if s.down {
		return errors.New("database down")
	}
	for _, id := range ids {
		s.written[id] = at
	}
	return nil
}

func TestFlush(t *testing.T) {
	tests := []struct {
		name string
		// failFirst makes the first flush fail.
		failFirst bool
	}{
		{name: "written at once"},
		{name: "kept through a failed flush", failFirst: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &touches{down: tt.failFirst, written: map[int64]time.Time{}}
			r := New(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
			r.Record(1)
			r.Record(2)
			before := time.Now()
			err := r.Flush(t.Context())
			if tt.failFirst != (err != nil) {
				t.Fatalf("first flush: err = %v, want an error: %t", err, tt.failFirst)
			}
			firstAt := time.Now()
			st.down = false
			r.Record(3)
			if err := r.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(st.written)); !slices.Equal(got, []int64{1, 2, 3}) {
				t.Fatalf("written %v, want tokens 1, 2 and 3", got)
			}
			// The uses of the failed flush keep its time: they are not
			// post-dated to the flush that wrote them.
			for _, id := range []int64{1, 2} {
				if at := st.written[id]; at.Before(before) || at.After(firstAt) {
					t.Errorf("token %d written as used at %v, want the first flush's time", id, at)
				}
			}
			if err := r.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if len(r.unwritten) != 0 {
				t.Errorf("%d uses still kept after a successful flush", len(r.unwritten))
			}
		})
	}
}

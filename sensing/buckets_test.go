package sensing

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestBucketingMatchesPostgreSQL puts instants into buckets as aggregates
// do, on Go's copy of the time zone database, and checks each against
// PostgreSQL's date_bin on the zone's wall clock, which the API's buckets
// are defined by (store.BucketQuery), around the zones' changes of every
// kind: by an hour, half an hour or 45 minutes, offsets of a quarter
// hour, and local mean time before 1900. It also checks that an hour or a
// quarter the bucketing calls whole is in one bucket at every minute.
func TestBucketingMatchesPostgreSQL(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	ctx := t.Context()
	zones := []string{"UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "Asia/Kathmandu",
		"America/St_Johns", "Pacific/Chatham", "Africa/Casablanca", "Europe/Dublin"}
	intervals := []time.Duration{time.Minute, 15 * time.Minute, time.Hour, 90 * time.Minute, 3 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}
	ranges := []time.Time{time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 10, 1, 0, 0, 0, 0, time.UTC), time.Date(1890, 1, 1, 0, 0, 0, 0, time.UTC)}
	rng := rand.New(rand.NewPCG(27, 2026))
	for _, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, interval := range intervals {
			for _, from := range ranges {
				span := 60 * 24 * time.Hour
				if interval < time.Hour {
					span = 7 * 24 * time.Hour // at most 10,000 buckets
				}
				q := store.BucketQuery{From: from, To: from.Add(span), Interval: interval, Zone: zone}
				var starts []store.BucketStart
				err := db.InSnapshot(ctx, func(tx *store.Tx) error {
					starts, err = tx.BucketStarts(ctx, q)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				b, err := newBucketing(q, starts)
				if err != nil {
					t.Fatal(err)
				}
				// Random instants, and each change of the zone's offset
				// in the range with the microsecond before it.
				var at []time.Time
				for range 300 {
					at = append(at, from.Add(time.Duration(rng.Int64N(int64(span)))).Truncate(time.Microsecond))
				}
				for t := from; t.Before(q.To); {
					_, end := t.In(loc).ZoneBounds()
					if end.IsZero() || !end.Before(q.To) {
						break
					}
					at = append(at, end.Add(-time.Microsecond), end)
					t = end
				}
				rows, _ := pool.Query(ctx, `
SELECT date_bin($2::interval, a AT TIME ZONE $3::text, TIMESTAMP '2000-01-03') AT TIME ZONE $3::text FROM unnest($1::timestamptz[]) AS a`,
					at, pgtype.Interval{Microseconds: interval.Microseconds(), Valid: true}, zone)
				want, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
				if err != nil {
					t.Fatal(err)
				}
				for k, a := range at {
					i, err := b.index(a)
					if err != nil {
						t.Fatalf("%s %s: %v", zone, interval, err)
					}
					if got := b.label(i); !got.Equal(want[k]) {
						t.Fatalf("bucket of %s in %s, %s buckets = %s, PostgreSQL's %s", a.Format(time.RFC3339Nano), zone, interval, got, want[k])
					}
				}
				// Hours and quarters: the rollups' and PostgreSQL's grains
				// of aggregation (aggregation.grain).
				for _, grain := range []time.Duration{time.Hour, 15 * time.Minute} {
					for k := range 200 {
						h := from.Add(time.Duration(rng.Int64N(int64(span/grain))) * grain)
						if k < 20 && len(at) > 300+2*k { // the grains of the changes
							h = at[300+2*k+1].Truncate(grain)
						}
						if !b.whole(h, grain) {
							continue
						}
						first, _ := b.index(h)
						for m := time.Duration(0); m <= grain; m += time.Minute {
							x := h.Add(min(m, grain-time.Microsecond))
							if i, _ := b.index(x); i != first {
								t.Fatalf("%s in %s, %s buckets: called whole for %s, but %s is in bucket %s, not %s", h, zone, interval, grain, x, b.label(i), b.label(first))
							}
						}
					}
				}
			}
		}
	}
}

// spansOf is the spans from bounds[0] to bounds[1], bounds[2] to
// bounds[3]..., each in hours after the start of 2025.
func spansOf(bounds ...float64) spans {
	at := func(h float64) time.Time {
		return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(h * float64(time.Hour)))
	}
	var s spans
	for i := 0; i < len(bounds); i += 2 {
		s.add(at(bounds[i]), at(bounds[i+1]))
	}
	return s
}

func TestSpansHalves(t *testing.T) {
	tests := []struct {
		name              string
		in, first, second spans
	}{
		{"OneSpan", spansOf(0, 10), spansOf(0, 5), spansOf(5, 10)},
		{"CutInTheSecond", spansOf(0, 2, 4, 12), spansOf(0, 2, 4, 7), spansOf(7, 12)},
		{"CutBetween", spansOf(0, 3, 5, 8), spansOf(0, 3), spansOf(5, 8)},
		{"Empty", spansOf(), spansOf(), spansOf()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, second := tt.in.halves()
			if !slices.EqualFunc(first.from, tt.first.from, time.Time.Equal) || !slices.EqualFunc(first.to, tt.first.to, time.Time.Equal) ||
				!slices.EqualFunc(second.from, tt.second.from, time.Time.Equal) || !slices.EqualFunc(second.to, tt.second.to, time.Time.Equal) {
				t.Errorf("halves of %v = %v, %v, want %v, %v", tt.in, first, second, tt.first, tt.second)
			}
		})
	}
}

func TestSpansWithin(t *testing.T) {
	tests := []struct {
		name         string
		s, o, within spans
	}{
		{"Inside", spansOf(1, 2, 5, 6), spansOf(0, 10), spansOf(1, 2, 5, 6)},
		{"CutAtBothEnds", spansOf(0, 10), spansOf(2.5, 3, 4, 7.25), spansOf(2.5, 3, 4, 7.25)},
		{"Straddling", spansOf(0, 1, 2, 3, 4, 5), spansOf(0.5, 2.5, 4.5, 9), spansOf(0.5, 1, 2, 2.5, 4.5, 5)},
		{"Apart", spansOf(0, 1), spansOf(1, 2), spansOf()},
		{"Empty", spansOf(), spansOf(0, 1), spansOf()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.s.within(tt.o)
			if !slices.EqualFunc(got.from, tt.within.from, time.Time.Equal) || !slices.EqualFunc(got.to, tt.within.to, time.Time.Equal) {
				t.Errorf("%v within %v = %v, want %v", tt.s, tt.o, got, tt.within)
			}
		})
	}
}

func TestSpansCutAt(t *testing.T) {
	tests := []struct {
		name          string
		in            spans
		at            float64
		before, after spans
	}{
		{"InASpan", spansOf(0, 2, 4, 12), 7, spansOf(0, 2, 4, 7), spansOf(7, 12)},
		{"AtABound", spansOf(0, 2, 4, 12), 4, spansOf(0, 2), spansOf(4, 12)},
		{"Between", spansOf(0, 3, 5, 8), 4, spansOf(0, 3), spansOf(5, 8)},
		{"BeforeAll", spansOf(1, 3), 0, spansOf(), spansOf(1, 3)},
		{"AfterAll", spansOf(1, 3), 3, spansOf(1, 3), spansOf()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at := spansOf(tt.at, tt.at+1).from[0]
			before, after := tt.in.cutAt(at)
			if !slices.EqualFunc(before.from, tt.before.from, time.Time.Equal) || !slices.EqualFunc(before.to, tt.before.to, time.Time.Equal) ||
				!slices.EqualFunc(after.from, tt.after.from, time.Time.Equal) || !slices.EqualFunc(after.to, tt.after.to, time.Time.Equal) {
				t.Errorf("%v cut at %v = %v, %v, want %v, %v", tt.in, at, before, after, tt.before, tt.after)
			}
		})
	}
}

func TestSpansCovers(t *testing.T) {
	tests := []struct {
		name   string
		s, o   spans
		covers bool
	}{
		{"Same", spansOf(0, 10), spansOf(0, 10), true},
		{"Inside", spansOf(0, 3, 5, 10), spansOf(1, 2, 5, 6, 9, 10), true},
		{"AcrossAGap", spansOf(0, 3, 5, 10), spansOf(2, 6), false},
		{"BeyondTheEnd", spansOf(0, 3), spansOf(2, 4), false},
		{"BeforeTheStart", spansOf(1, 3), spansOf(0, 2), false},
		{"InAGap", spansOf(0, 1, 5, 6), spansOf(2, 3), false},
		{"Nothing", spansOf(0, 1), spansOf(), true},
		{"OfNothing", spansOf(), spansOf(0, 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.covers(tt.o); got != tt.covers {
				t.Errorf("%v covers %v = %v, want %v", tt.s, tt.o, got, tt.covers)
			}
		})
	}
}

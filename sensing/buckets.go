package sensing

import (
	"math"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// bucketOrigin is where buckets are counted from on the zone's wall
// clock (store.BucketQuery), in microseconds from 1970.
var bucketOrigin = time.Date(2000, 1, 3, 0, 0, 0, 0, time.UTC).UnixMicro()

// bucketing puts instants into the buckets of a query as PostgreSQL's
// date_bin on the zone's wall clock does, without a round trip per
// instant: the wall clock comes from Go's copy of the same time zone
// database, the instant each bucket's start names from PostgreSQL
// (store.Tx.BucketStarts). TestBucketingMatchesPostgreSQL holds the two
// together.
type bucketing struct {
	loc    *time.Location
	stride int64 // the interval, µs
	first  int64 // wall clock of starts[0], µs
	starts []store.BucketStart
	// The zone's offset over [zoneFrom, zoneTo), the period of the instant
	// last placed, µs: most instants need no look-up.
	zoneFrom, zoneTo, offset int64
}

func newBucketing(q store.BucketQuery, starts []store.BucketStart) (*bucketing, error) {
	zone := q.Zone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, apperr.Errorf(apperr.Invalid, "tz %q is not an IANA time zone", zone)
	}
	if len(starts) == 0 || q.Interval < time.Microsecond {
		return nil, apperr.Errorf(apperr.Internal, "no buckets for %v", q)
	}
	return &bucketing{loc: loc, stride: q.Interval.Microseconds(), first: starts[0].Local.UnixMicro(), starts: starts, zoneTo: math.MinInt64}, nil
}

// wall is the wall clock of t in the zone, µs from 1970.
func (b *bucketing) wall(t time.Time) int64 {
	u := t.UnixMicro()
	if u < b.zoneFrom || u >= b.zoneTo {
		local := t.In(b.loc)
		_, offset := local.Zone()
		from, to := local.ZoneBounds()
		b.offset, b.zoneFrom, b.zoneTo = int64(offset)*1e6, math.MinInt64, math.MaxInt64
		if !from.IsZero() {
			b.zoneFrom = from.UnixMicro()
		}
		if !to.IsZero() {
			b.zoneTo = to.UnixMicro()
		}
	}
	return u + b.offset
}

// bin is the bucket of the wall clock w, counted from starts[0].
func (b *bucketing) bin(w int64) int {
	d := w - bucketOrigin
	n := d / b.stride
	if d%b.stride < 0 {
		n--
	}
	return int((bucketOrigin + n*b.stride - b.first) / b.stride)
}

// index is the bucket of t, as an index of starts.
func (b *bucketing) index(t time.Time) (int, error) {
	i := b.bin(b.wall(t))
	if i < 0 || i >= len(b.starts) {
		return 0, apperr.Errorf(apperr.Internal, "%s is outside the buckets of its range", t)
	}
	return i, nil
}

// label is the instant bucket i starts at, as a query names it.
func (b *bucketing) label(i int) time.Time { return b.starts[i].At }

// whole tells whether [from, from+d) lies in one bucket: whether a rollup
// of it serves that bucket. Within a period of one offset the wall clock
// only goes forward, so a period's first and last instants tell.
func (b *bucketing) whole(from time.Time, d time.Duration) bool {
	end := from.Add(d).UnixMicro()
	i := b.bin(b.wall(from))
	for u := from.UnixMicro(); ; {
		b.wall(time.UnixMicro(u))
		last := min(b.zoneTo, end) - 1
		if b.bin(last+b.offset) != i {
			return false
		}
		if last+1 == end {
			return true
		}
		u = last + 1
		if b.bin(b.wall(time.UnixMicro(u))) != i {
			return false
		}
	}
}

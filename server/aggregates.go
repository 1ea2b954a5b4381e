package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// The limits of aggregateReadings, as the spec states them.
const (
	maxBuckets  = 10_000
	minInterval = time.Minute
	maxInterval = 31 * 24 * time.Hour
	// maxAggregateValues bounds a response's size, and so its memory: the
	// values it lists (buckets × inputs and outputs listed × fns, nulls
	// included) are at most this many, some 5 MB of JSON.
	maxAggregateValues = 200_000
)

// aggregateFns are the functions a bucket can report, in the order they
// are listed when a request names them in another.
var aggregateFns = []string{"avg", "min", "max", "sum", "count", "first", "last", "median", "range", "rate"}

// AggregateReadings cuts a range of readings into buckets and reports, per
// bucket, the functions asked for of each input and output, in one call
// to the domain, which reads the hourly rollups where they serve and the
// readings elsewhere. Input statistics are encoded as their rows arrive;
// output statistics, which the domain computes with the sensor's
// formulas, are encoded bucket by bucket. The response is refused, before it grows,
// when it would list more than maxAggregateValues values.
func (s *Server) AggregateReadings(ctx context.Context, req gen.AggregateReadingsRequestObject) (gen.AggregateReadingsResponseObject, error) {
	p := req.Params
	q, fns, interval, err := bucketQuery(p)
	if err != nil {
		return nil, err
	}
	enc := &bucketEncoder{fns: fns, fill: p.Fill != nil && *p.Fill == gen.Null, budget: maxAggregateValues / len(fns),
		byName: byName(p.Keys), withOutputs: p.Outputs != nil && *p.Outputs}
	opts, err := readOptions(nil, nil, p.AsOf)
	if err != nil {
		return nil, err
	}
	use, err := s.reads(ctx).Aggregate(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), q,
		sensing.AggregateOptions{Fill: enc.fill, Outputs: enc.withOutputs, AsOf: opts.AsOf}, enc)
	if err != nil {
		return nil, err
	}
	return aggregatesBody{jsonBody(enc.finish()), interval, use}, nil
}

// aggregatesBody is the buckets, with the interval they are cut by.
type aggregatesBody struct {
	body     jsonBody
	interval string
	rollups  store.RollupUse
}

func (a aggregatesBody) VisitAggregateReadingsResponse(w http.ResponseWriter) error {
	w.Header().Set("X-Readings-Interval", a.interval)
	w.Header().Set("X-Rollups", string(a.rollups))
	return a.body.write(w)
}

// bucketQuery reads and checks the parameters, and returns the interval
// used as interval takes it.
func bucketQuery(p gen.AggregateReadingsParams) (store.BucketQuery, []string, string, error) {
	from, to, err := boundedRange(p.DatetimeGte, p.DatetimeLt)
	if err != nil {
		return store.BucketQuery{}, nil, "", err
	}
	q := store.BucketQuery{From: from, To: to.Add(time.Microsecond), Zone: "UTC"}
	var name string
	switch {
	case (p.Interval == nil) == (p.MaxPoints == nil):
		return q, nil, "", apperr.Errorf(apperr.Invalid, "give exactly one of interval and max_points")
	case p.Interval != nil:
		name = *p.Interval
		if q.Interval, err = parseInterval(name); err != nil {
			return q, nil, "", err
		}
	default:
		if name, q.Interval, err = pickInterval(q.To.Sub(q.From), *p.MaxPoints); err != nil {
			return q, nil, "", err
		}
	}
	if p.Tz != nil && *p.Tz != "" {
		if _, err := time.LoadLocation(*p.Tz); err != nil || *p.Tz == "Local" {
			return q, nil, "", apperr.Errorf(apperr.Invalid, "tz %q is not an IANA time zone such as Europe/London", *p.Tz)
		}
		q.Zone = *p.Tz
	}
	if n := bucketsAtMost(q.To.Sub(q.From), q.Interval); n > maxBuckets {
		return q, nil, "", apperr.Errorf(apperr.Invalid,
			"the range holds about %d buckets of %s; at most %d are returned: widen the interval or narrow the range", n, name, maxBuckets)
	}
	fns := []string{"avg", "min", "max"}
	if p.Fn != nil {
		fns = nil
		for _, fn := range strings.Split(*p.Fn, ",") {
			if !slices.Contains(aggregateFns, fn) {
				return q, nil, "", apperr.Errorf(apperr.Invalid, "fn %q is none of %s", fn, strings.Join(aggregateFns, ", "))
			}
			if !slices.Contains(fns, fn) {
				fns = append(fns, fn)
			}
		}
	}
	q.FirstLast = slices.ContainsFunc(fns, func(fn string) bool { return fn == "first" || fn == "last" || fn == "rate" })
	q.Median = slices.Contains(fns, "median")
	return q, fns, name, nil
}

// bucketsAtMost is how many buckets of interval a span can touch: one more
// than it holds, for a range that does not start on a bucket boundary.
func bucketsAtMost(span, interval time.Duration) time.Duration {
	return span/interval + 2
}

// intervalLadder is what max_points picks from: widths a chart reads
// easily, each a whole number of the next smaller where it can be.
var intervalLadder = []string{"1m", "2m", "5m", "10m", "15m", "30m", "1h", "2h", "3h", "6h", "12h", "1d", "2d", "7d", "14d", "31d"}

// pickInterval is the narrowest interval of the ladder that cuts span into
// at most maxPoints buckets.
func pickInterval(span time.Duration, maxPoints int) (string, time.Duration, error) {
	for _, name := range intervalLadder {
		d, _ := parseInterval(name)
		if bucketsAtMost(span, d) <= time.Duration(maxPoints) {
			return name, d, nil
		}
	}
	return "", 0, apperr.Errorf(apperr.Invalid,
		"even 31d buckets are more than max_points=%d over this range: raise max_points or narrow the range", maxPoints)
}

// parseInterval reads 15m, 1h, 7d…, from 1 minute to 31 days.
func parseInterval(s string) (time.Duration, error) {
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[s[len(s)-1]]
	n, err := strconv.Atoi(s[:len(s)-1])
	d := time.Duration(n) * unit
	if err != nil || unit == 0 || d < minInterval || d > maxInterval {
		return 0, apperr.Errorf(apperr.Invalid, "interval %q must be a whole number of m, h or d, from 1m to 31d", s)
	}
	return d, nil
}

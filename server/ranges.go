package server

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// timeRange turns a request's datetime bounds (datetime__gte, __gt, __lte,
// __lt; nil where not given) into the one form every read and delete of
// readings uses: inclusive instants to the microsecond, from after to when
// the bounds select nothing. Readings are stored to the microsecond, so
// "after t" is "at or after t's next microsecond", which lets one SQL
// statement serve every combination of bounds.
func timeRange(gte, gt, lte, lt *gen.Bound) (from, to time.Time, err error) {
	from, to = store.MinTime, store.MaxTime
	var bounds [4]time.Time
	for i, b := range []*gen.Bound{gte, gt, lte, lt} {
		if b == nil {
			continue
		}
		if bounds[i], err = parseBound(*b); err != nil {
			name := [...]string{"datetime__gte", "datetime__gt", "datetime__lte", "datetime__lt"}[i]
			return from, to, &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("%s: %v", name, err),
				Details: map[string]any{"parameter": name}}
		}
	}
	if gte != nil {
		from = later(from, ceilMicro(bounds[0]))
	}
	if gt != nil {
		from = later(from, bounds[1].Truncate(time.Microsecond).Add(time.Microsecond))
	}
	if lte != nil {
		to = earlier(to, bounds[2].Truncate(time.Microsecond))
	}
	if lt != nil {
		to = earlier(to, ceilMicro(bounds[3]).Add(-time.Microsecond))
	}
	return from, to, nil
}

// parseBound reads a bound as RFC 3339 with a zone (nanoseconds allowed,
// as before bounds took milliseconds) or as milliseconds since the epoch,
// the form Grafana's ${__from} and ${__timeFrom} give.
func parseBound(b gen.Bound) (time.Time, error) {
	if ms, err := strconv.ParseInt(b, 10, 64); err == nil {
		t := time.UnixMilli(ms).UTC()
		if t.Before(store.MinTime) || t.After(store.MaxTime) {
			return t, fmt.Errorf("%s milliseconds is outside 0001-01-01 to 9999-12-31", b)
		}
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, b)
	if err != nil {
		return t, fmt.Errorf("%q is neither RFC 3339 with a zone, such as 2024-05-01T00:00:00Z, nor epoch milliseconds", b)
	}
	return t, nil
}

// boundedRange is timeRange of the two bounds that operations on a range
// (aggregates, range deletes) require, and Invalid when they select
// nothing.
func boundedRange(gte, lt gen.Bound) (from, to time.Time, err error) {
	if from, to, err = timeRange(&gte, nil, nil, &lt); err != nil {
		return from, to, err
	}
	if from.After(to) {
		return from, to, apperr.Errorf(apperr.Invalid, "datetime__lt must be after datetime__gte")
	}
	return from, to, nil
}

func ceilMicro(t time.Time) time.Time {
	if f := t.Truncate(time.Microsecond); !f.Equal(t) {
		return f.Add(time.Microsecond)
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

package store

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// spans are instants [from[i], to[i]), ascending and apart.
type spans struct{ from, to []time.Time }

// add appends [a, b), joined to the last span when they meet.
func (s *spans) add(a, b time.Time) {
	if !a.Before(b) {
		return
	}
	if n := len(s.to); n > 0 && !s.to[n-1].Before(a) {
		if b.After(s.to[n-1]) {
			s.to[n-1] = b
		}
		return
	}
	s.from, s.to = append(s.from, a), append(s.to, b)
}

// maxSpans bounds the spans a query reads the readings of, and so the
// cost of skipping them in the rollups: past it, a query reads the
// readings of its whole range.
const maxSpans = 100

// BucketPlan is what an aggregate reads: the rollups of the hours [h0,
// h1) outside the spans, and the readings of the spans, separately for
// the inputs (and the counts) and for the outputs.
type BucketPlan struct {
	sensor          Sensor
	q               BucketQuery
	withOutputs     bool
	h0, h1          time.Time
	inputs, outputs spans
}

// Use says where an answer following the plan comes from.
func (p BucketPlan) Use() RollupUse {
	switch {
	case !p.h0.Before(p.h1):
		return RollupsNone
	case len(p.inputs.from) == 0 && (!p.withOutputs || len(p.outputs.from) == 0):
		return RollupsUsed
	}
	return RollupsPartial
}

func (p BucketPlan) args(s spans) []any {
	zone := p.q.Zone
	if zone == "" {
		zone = "UTC"
	}
	return []any{p.sensor.ID, p.h0, p.h1, pgtype.Interval{Microseconds: p.q.Interval.Microseconds(), Valid: true}, zone, s.from, s.to}
}

// PlanBuckets decides what an aggregate of the sensor's readings that q
// selects reads, its outputs' statistics too when outputs is set: the
// readings of the whole range unless the rollups can serve it, and then
// the readings of the edges of the range that are not whole hours, and of
// the hours whose rollups are queued for a recomputation or, for the
// outputs, were computed with another version of the sensor's formulas.
// Buckets of whole hours, aligned on the hours in q's zone throughout the
// range, without a median, can be read from the rollups. The statistics
// are the same either way, to the rounding of the sums. Run in one
// snapshot (InSnapshot) with the reads that follow the plan.
func (tx *Tx) PlanBuckets(ctx context.Context, sensor Sensor, q BucketQuery, outputs bool) (BucketPlan, error) {
	plan, err := planBuckets(ctx, tx.tx, sensor, q, outputs)
	return plan, readError("plan buckets", err)
}

func planBuckets(ctx context.Context, tx pgx.Tx, sensor Sensor, q BucketQuery, outputs bool) (BucketPlan, error) {
	p := BucketPlan{sensor: sensor, q: q, withOutputs: outputs, h0: q.From, h1: q.From}
	whole := func() BucketPlan {
		p.h1 = p.h0
		p.inputs, p.outputs = spans{}, spans{}
		p.inputs.add(q.From, q.To)
		p.outputs.add(q.From, q.To)
		return p
	}
	h0, h1 := q.From.Truncate(time.Hour), q.To.Truncate(time.Hour)
	if h0.Before(q.From) {
		h0 = h0.Add(time.Hour)
	}
	if q.Raw || q.Median || !h0.Before(h1) || !hourAligned(q) {
		return whole(), nil
	}
	p.h0, p.h1 = h0, h1
	rows, _ := tx.Query(ctx, `SELECT hour, inputs FROM rollup_dirty WHERE sensor_id = $1 AND hour >= $2 AND hour < $3 ORDER BY hour`,
		sensor.ID, h0, h1)
	type queued struct {
		Hour   time.Time
		Inputs bool
	}
	dirty, err := pgx.CollectRows(rows, pgx.RowToStructByPos[queued])
	if err != nil {
		return p, err
	}
	var stale []time.Time
	if outputs {
		rows, _ := tx.Query(ctx, `SELECT hour FROM rollup_hours WHERE sensor_id = $1 AND hour >= $2 AND hour < $3 AND version <> $4`,
			sensor.ID, h0, h1, sensor.version())
		if stale, err = pgx.CollectRows(rows, pgx.RowTo[time.Time]); err != nil {
			return p, err
		}
	}
	p.inputs.add(q.From, h0)
	p.outputs.add(q.From, h0)
	for _, d := range dirty {
		if d.Inputs {
			p.inputs.add(d.Hour, d.Hour.Add(time.Hour))
		}
		stale = append(stale, d.Hour)
	}
	slices.SortFunc(stale, func(a, b time.Time) int { return a.Compare(b) })
	for _, h := range stale {
		p.outputs.add(h, h.Add(time.Hour))
	}
	p.inputs.add(h1, q.To)
	p.outputs.add(h1, q.To)
	if sensor.Instance.Linked() {
		// A linked input's value is another sensor's, which the hours'
		// rollups do not follow: its outputs are always read.
		p.outputs = spans{}
		p.outputs.add(q.From, q.To)
	}
	if len(p.inputs.from) > maxSpans || len(p.outputs.from) > maxSpans {
		return whole(), nil
	}
	return p, nil
}

// hourAligned tells whether every bucket of q is made of whole UTC hours:
// its interval is whole hours, and throughout the range the zone's offset
// is whole hours and changes on the hour. (Asia/Kolkata's +05:30 never
// is; Europe/Paris' offsets are, since 1911.)
func hourAligned(q BucketQuery) bool {
	if q.Interval%time.Hour != 0 {
		return false
	}
	zone := q.Zone
	if zone == "" {
		zone = "UTC"
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return false
	}
	for t := q.From; t.Before(q.To); {
		local := t.In(loc)
		if _, offset := local.Zone(); offset%3600 != 0 {
			return false
		}
		_, end := local.ZoneBounds()
		if end.IsZero() || !end.Before(q.To) {
			return true
		}
		if end.Unix()%3600 != 0 || end.Nanosecond() != 0 {
			return false
		}
		t = end
	}
	return true
}

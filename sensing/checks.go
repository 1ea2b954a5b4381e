package sensing

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// The kinds of validity check.
const (
	CheckRange = "range"
	CheckSpike = "spike"
	CheckRate  = "rate"
	CheckStuck = "stuck"
)

// MaxChecks bounds a sensor's checks.
const MaxChecks = 50

// defaultRatePer is a rate check's unit of time when none is given: a day.
const defaultRatePer = 86_400

// CheckSpec is a check as a client writes it: its target by key.
type CheckSpec struct {
	Target     string
	Kind       string
	Min, Max   *float64
	Bound      *float64
	Per, Count *int
	Flag       string // "" for suspect
}

// Checks returns the sensor's validity checks. It returns NotFound.
func (s *Service) Checks(ctx context.Context, key store.SensorKey) ([]store.Check, error) {
	return s.db.Checks(ctx, key)
}

// SetChecks replaces the sensor's validity checks, which apply to the
// readings stored from then on, and records the change in the audit
// trail. It returns NotFound, Conflict for an archived project, and
// Invalid, naming the check, for a target that is not the sensor's or
// numbers the check cannot run with.
func (s *Service) SetChecks(ctx context.Context, key store.SensorKey, specs []CheckSpec) ([]store.Check, error) {
	if len(specs) > MaxChecks {
		return nil, apperr.Errorf(apperr.Invalid, "a sensor has at most %d checks", MaxChecks)
	}
	var checks []store.Check
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		sensor, err := tx.LockSensor(ctx, key)
		if err != nil {
			return err
		}
		checks = make([]store.Check, len(specs))
		for i, spec := range specs {
			if checks[i], err = newCheck(sensor, spec); err != nil {
				var e *apperr.Error
				if ae, ok := err.(*apperr.Error); ok {
					e = ae
				} else {
					return err
				}
				return &apperr.Error{Code: e.Code, Message: fmt.Sprintf("check %d: %s", i, e.Message), Details: map[string]any{"index": i}}
			}
		}
		before, err := tx.SetChecks(ctx, sensor.ID, checks)
		if err != nil {
			return err
		}
		return tx.Audit(ctx, store.Change{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: key.SensorID,
			Kind: store.AuditChecks, Action: "update", Before: before, After: checks})
	})
	return checks, err
}

// newCheck is spec on the sensor, its target found and its numbers checked.
func newCheck(sensor store.Sensor, spec CheckSpec) (store.Check, error) {
	c := store.Check{Target: spec.Target, Kind: spec.Kind, Min: spec.Min, Max: spec.Max, Flag: spec.Flag}
	if c.Flag == "" {
		c.Flag = store.Suspect
	}
	found := false
	if sensor.Instance != nil {
		for _, in := range sensor.Instance.Inputs {
			if in.Key == spec.Target {
				c.TargetID, found = in.ID, true
			}
		}
		for _, out := range sensor.Instance.Outputs {
			if out.Key == spec.Target {
				c.TargetID, c.Output, found = out.ID, true, true
			}
		}
	} else if id, err := strconv.ParseInt(spec.Target, 10, 64); err == nil && id > 0 {
		c.TargetID, found = id, true
	}
	if !found {
		return c, apperr.Errorf(apperr.Invalid, "target %q is not one of the sensor's inputs or outputs", spec.Target)
	}
	finite := func(p *float64) bool { return p == nil || !math.IsNaN(*p) && !math.IsInf(*p, 0) }
	switch c.Kind {
	case CheckRange:
		if c.Min == nil && c.Max == nil || !finite(c.Min) || !finite(c.Max) || c.Min != nil && c.Max != nil && *c.Min > *c.Max {
			return c, apperr.Errorf(apperr.Invalid, "a range check needs min, max or both, finite, min not above max")
		}
	case CheckSpike, CheckRate:
		if spec.Bound == nil || !finite(spec.Bound) || *spec.Bound < 0 {
			return c, apperr.Errorf(apperr.Invalid, "a %s check needs bound, a finite number, 0 or more", c.Kind)
		}
		c.Bound = *spec.Bound
		if c.Kind == CheckRate {
			c.Per = defaultRatePer
			if spec.Per != nil {
				c.Per = int64(*spec.Per)
			}
		}
	case CheckStuck:
		if spec.Count == nil || *spec.Count < 2 || *spec.Count > 1000 {
			return c, apperr.Errorf(apperr.Invalid, "a stuck check needs count, 2 to 1000")
		}
		c.Count = *spec.Count
	default:
		return c, apperr.Errorf(apperr.Invalid, "kind %q is not a check's (range, spike, rate, stuck)", c.Kind)
	}
	return c, nil
}

// runChecks runs the sensor's checks on the readings a write stored, which
// chunks gives, and sets the flags they decide, in the write's
// transaction. Each chunk's readings are checked against their neighbours
// as stored: the readings just before and after the chunk, and those
// between its readings. It says whether it set any flag, and whether it
// rejected a value of a stored reading that is not one of the write's (a
// spike's neighbour).
func (s *Service) runChecks(ctx context.Context, tx *store.Tx, sensor store.Sensor, checks []store.Check, chunks func(func([]store.Reading) error) error) (set, rejectedStored bool, err error) {
	before := 2 // a spike's two neighbours, when the reading after the chunk's first is its first
	for _, c := range checks {
		if c.Kind == CheckStuck {
			before = max(before, c.Count-1)
		}
	}
	err = chunks(func(chunk []store.Reading) error {
		if len(chunk) == 0 {
			return nil
		}
		written := make(map[int64]bool, len(chunk))
		for _, r := range chunk {
			written[r.Time.UnixMicro()] = true
		}
		seq, err := neighbourhood(ctx, tx, sensor, chunk[0].Time, chunk[len(chunk)-1].Time, before)
		if err != nil {
			return err
		}
		flags, err := s.check(ctx, tx, sensor, checks, seq, written)
		if err != nil {
			return err
		}
		inserted, err := tx.InsertFlags(ctx, sensor.ID, flags)
		set = set || len(inserted) > 0
		for _, f := range inserted {
			rejectedStored = rejectedStored || f.Flag == store.Rejected && (!f.From.Equal(f.To) || !written[f.From.UnixMicro()])
		}
		return err
	})
	return set, rejectedStored, err
}

// neighbourhood is the sensor's readings from first to last as stored, and
// up to before readings before them and one after, in time order.
func neighbourhood(ctx context.Context, tx *store.Tx, sensor store.Sensor, first, last time.Time, before int) ([]store.Reading, error) {
	var earlier, seq []store.Reading
	keep := func(into *[]store.Reading) func(*store.Reading) error {
		return func(r *store.Reading) error {
			*into = append(*into, store.Reading{Time: r.Time, InputIDs: append([]int64(nil), r.InputIDs...), Values: append([]float64(nil), r.Values...)})
			return nil
		}
	}
	if err := tx.ListReadings(ctx, sensor, store.ReadingQuery{From: store.MinTime, To: first.Add(-time.Microsecond), Desc: true, Limit: before}, keep(&earlier)); err != nil {
		return nil, err
	}
	for i := len(earlier) - 1; i >= 0; i-- {
		seq = append(seq, earlier[i])
	}
	if err := tx.ListReadings(ctx, sensor, store.ReadingQuery{From: first, To: last}, keep(&seq)); err != nil {
		return nil, err
	}
	if err := tx.ListReadings(ctx, sensor, store.ReadingQuery{From: last.Add(time.Microsecond), To: store.MaxTime, Limit: 1}, keep(&seq)); err != nil {
		return nil, err
	}
	return seq, nil
}

// point is a target's value in a reading.
type point struct {
	t       time.Time
	v       float64
	written bool
}

// check decides the flags checks set on seq, the readings around a write
// in time order, of which those at the instants written were written.
func (s *Service) check(ctx context.Context, tx *store.Tx, sensor store.Sensor, checks []store.Check, seq []store.Reading, written map[int64]bool) ([]store.FlagSpec, error) {
	if len(seq) == 0 {
		return nil, nil
	}
	at := make([]time.Time, len(seq))
	for i := range seq {
		at[i] = seq[i].Time
	}
	series := map[int64][]point{} // by target
	var ids []int64
	for _, c := range checks {
		series[c.TargetID] = nil
		ids = append(ids, c.TargetID)
	}
	vals, err := s.newValues(ctx, tx, sensor, at, ids)
	if err != nil {
		return nil, err
	}
	for i := range seq {
		vals.compute(&seq[i])
		for id := range series {
			if v, ok := vals.value(id); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				series[id] = append(series[id], point{t: seq[i].Time, v: v, written: written[seq[i].Time.UnixMicro()]})
			}
		}
	}
	var flags []store.FlagSpec
	for _, c := range checks {
		kind := c.Kind
		pts := series[c.TargetID]
		flag := func(p point, reason string) {
			spec := store.FlagSpec{Flag: c.Flag, From: p.t, To: p.t, Reason: reason, Check: &kind}
			if !c.Output {
				id := c.TargetID
				spec.InputID = &id
			}
			flags = append(flags, spec)
		}
		for i, p := range pts {
			switch c.Kind {
			case CheckRange:
				if p.written && (c.Min != nil && p.v < *c.Min || c.Max != nil && p.v > *c.Max) {
					flag(p, fmt.Sprintf("%s %s is outside the plausible range%s", c.Target, fmtNumber(p.v), rangeText(c)))
				}
			case CheckSpike:
				if i == 0 || i+1 == len(pts) || !p.written && !pts[i-1].written && !pts[i+1].written {
					continue
				}
				up, down := p.v-pts[i-1].v, p.v-pts[i+1].v
				if math.Abs(up) > c.Bound && math.Abs(down) > c.Bound && (up > 0) == (down > 0) {
					flag(p, fmt.Sprintf("%s %s jumps by more than %s from both its neighbours (%s, %s)", c.Target, fmtNumber(p.v), fmtNumber(c.Bound), fmtNumber(pts[i-1].v), fmtNumber(pts[i+1].v)))
				}
			case CheckRate:
				if !p.written {
					continue
				}
				rate := func(q point) float64 {
					dt := math.Abs(p.t.Sub(q.t).Seconds())
					if dt == 0 {
						return 0
					}
					return math.Abs(p.v-q.v) / dt * float64(c.Per)
				}
				switch {
				case i > 0 && rate(pts[i-1]) > c.Bound:
					flag(p, fmt.Sprintf("%s changes by %s per %ds from the reading before, beyond %s", c.Target, fmtNumber(rate(pts[i-1])), c.Per, fmtNumber(c.Bound)))
				case i+1 < len(pts) && !pts[i+1].written && rate(pts[i+1]) > c.Bound:
					flag(p, fmt.Sprintf("%s changes by %s per %ds to the reading after, beyond %s", c.Target, fmtNumber(rate(pts[i+1])), c.Per, fmtNumber(c.Bound)))
				}
			case CheckStuck:
				if !p.written || i+1 < c.Count {
					continue
				}
				stuck := true
				for j := i - c.Count + 1; j < i && stuck; j++ {
					stuck = pts[j].v == p.v
				}
				if stuck {
					flag(p, fmt.Sprintf("%s has been %s for %d readings in a row", c.Target, fmtNumber(p.v), c.Count))
				}
			}
		}
	}
	return flags, nil
}

func rangeText(c store.Check) string {
	switch {
	case c.Min != nil && c.Max != nil:
		return fmt.Sprintf(" %s to %s", fmtNumber(*c.Min), fmtNumber(*c.Max))
	case c.Min != nil:
		return " from " + fmtNumber(*c.Min)
	}
	return " up to " + fmtNumber(*c.Max)
}

func fmtNumber(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

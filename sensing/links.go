package sensing

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/store"
)

// linkReader reads what computing linked inputs needs: each link's source,
// and its readings with the flags in force on them. A read uses its
// reader (the primary or a standby); a write, its transaction, whose
// connection it already holds and whose writes it sees.
type linkReader interface {
	LinkSource(ctx context.Context, of store.Sensor, id int64) (store.Sensor, error)
	ListLinkReadings(ctx context.Context, sensor store.Sensor, q store.LinkQuery, head func([]store.Flag) error, fn func(*store.Reading) error) error
}

// sensorLinks returns the values of the sensor's linked inputs (nil
// without links) for its readings at the instants at, ascending, or, with
// at nil, for readings anywhere from from to to. Each source is read once,
// from its reading that serves from, as a read of it gives its values:
// without those the flags in force now (or at asOf) reject, and, at
// asOf, with its configuration in force then. A source's outputs are
// computed with its own links (as they were at asOf), read before its
// readings so that no query waits on another's rows. depth is how many
// links led here.
func (s *Service) sensorLinks(ctx context.Context, lr linkReader, sensor store.Sensor, from, to time.Time, at []time.Time, asOf *time.Time, depth int) ([]*formulas.Link, error) {
	inst := sensor.Instance
	if inst == nil {
		return nil, nil
	}
	var links []*formulas.Link
	for i, in := range inst.Inputs {
		l := in.Link
		if l == nil {
			continue
		}
		if links == nil {
			links = make([]*formulas.Link, len(inst.Inputs))
		}
		var samples []formulas.Sample
		// SetSensorLinks refuses longer chains; the bound keeps a read
		// finite whatever the stored links.
		if depth < store.MaxLinkChain {
			source, err := lr.LinkSource(ctx, sensor, l.SensorID)
			if err == nil {
				err = s.instanceAsOf(ctx, &source, asOf)
			}
			switch {
			case apperr.CodeOf(err) == apperr.NotFound:
				// Gone: the input is missing.
			case err != nil:
				return nil, err
			default:
				q := store.LinkQuery{From: later(from.Add(-l.Staleness), store.MinTime), First: from, To: to}
				if samples, err = s.linkSamples(ctx, lr, source, l.Key, q, at, asOf, depth+1); err != nil {
					return nil, err
				}
			}
		}
		links[i] = formulas.NewLink(samples, l.Staleness)
	}
	return links, nil
}

// DefaultMaxLinkValues bounds the memory of a link's values read over a
// range whose readings stream (aggregates), unless Config says otherwise:
// 16 MiB. A page keeps at most one per reading.
const DefaultMaxLinkValues = 1_000_000

// linkSamples reads the source's value key at its readings that q
// selects: an input at each reading that carries it, an output at each
// reading (NaN where that reading cannot give it, so that it is missing
// rather than an older value). Like a read of the source, it leaves out
// what the flags in force now (or at asOf) reject: a reading rejected
// whole is not there, nor is an input rejected, so an input link takes
// the latest reading whose input is not, and an output is computed
// without the rejected inputs. With at given, it keeps only the samples
// that are the latest at or before one of those instants, so that a page
// holds at most one sample per reading whatever the source's rate.
func (s *Service) linkSamples(ctx context.Context, lr linkReader, source store.Sensor, key string, q store.LinkQuery, at []time.Time, asOf *time.Time, depth int) ([]formulas.Sample, error) {
	value, err := s.sourceValue(ctx, lr, source, key, &q, asOf, depth)
	if err != nil || value == nil {
		return nil, err
	}
	q.AsOf = asOf
	limit := cmp.Or(s.cfg.MaxLinkValues, DefaultMaxLinkValues)
	var (
		samples []formulas.Sample
		fs      *flagSet // the flags that reject values; nil: none
	)
	next := 0 // the first of at not before the last sample
	err = lr.ListLinkReadings(ctx, source, q, func(flags []store.Flag) error {
		// The store leaves out the readings the link cannot take; an
		// output is computed without the inputs rejected.
		if fs = newFlagSet(flags); !fs.rejects() {
			fs = nil
		}
		return nil
	}, func(r *store.Reading) error {
		if at == nil && len(samples) == limit {
			return &apperr.Error{Code: apperr.Invalid, Details: map[string]any{"sensor_id": source.ID},
				Message: fmt.Sprintf("sensor %d (%s), the source of a linked input, has more than %d values in the range; ask for a shorter range", source.ID, source.Name, limit)}
		}
		if fs != nil {
			fs.lookup(r.Time)
			var whole bool
			if r, whole = fs.without(r); whole {
				return nil
			}
		}
		sample, ok := sampleOf(value, q.InputID != 0, r)
		if !ok {
			return nil
		}
		if n := len(samples); at != nil && n > 0 {
			last := samples[n-1].Time
			for next < len(at) && at[next].Before(last) {
				next++
			}
			if next == len(at) || !at[next].Before(r.Time) {
				samples = samples[:n-1] // no instant falls between it and r
			}
		}
		samples = append(samples, sample)
		return nil
	})
	return samples, err
}

// sampleOf is the sample of value at the source's reading r; none when
// the value is an input (input) that r does not carry.
func sampleOf(value func(*store.Reading) (float64, bool), input bool, r *store.Reading) (formulas.Sample, bool) {
	v, ok := value(r)
	if !ok && input {
		return formulas.Sample{}, false
	}
	if !ok {
		v = math.NaN()
	}
	return formulas.Sample{Time: r.Time, Value: v}, true
}

// sourceValue returns what reads value key from one of the source's
// readings: the input it carries (and sets q.InputID to it), or the output
// computed from it. It returns nil when the source has no such key (its
// blueprint changed since the link was set).
func (s *Service) sourceValue(ctx context.Context, lr linkReader, source store.Sensor, key string, q *store.LinkQuery, asOf *time.Time, depth int) (func(*store.Reading) (float64, bool), error) {
	input, output := keyOf(source, key)
	switch {
	case input != 0:
		q.InputID = input
		return inputValue(input), nil
	case output < 0:
		return nil, nil
	}
	// The source's own links serve its readings from the one before First.
	links, err := s.sensorLinks(ctx, lr, source, q.From, q.To, nil, asOf, depth)
	if err != nil {
		return nil, err
	}
	return outputValue(s.outputsOf(source, links), output), nil
}

// keyOf says which of the source's values key names: the input of that
// id, or else the output of that index (-1: none, when the source's
// blueprint changed since the link was set).
func keyOf(source store.Sensor, key string) (input int64, output int) {
	inst := source.Instance
	if inst == nil {
		return 0, -1
	}
	if i := slices.IndexFunc(inst.Inputs, func(in store.InstanceInput) bool { return in.Key == key }); i >= 0 {
		return inst.Inputs[i].ID, -1
	}
	return 0, slices.IndexFunc(inst.Outputs, func(o store.InstanceOutput) bool { return o.Key == key })
}

// inputValue reads input id from a reading that carries it.
func inputValue(id int64) func(*store.Reading) (float64, bool) {
	return func(r *store.Reading) (float64, bool) {
		if j := slices.Index(r.InputIDs, id); j >= 0 {
			return r.Values[j], true
		}
		return 0, false
	}
}

// outputValue computes output k of a reading with w.
func outputValue(w *Outputs, k int) func(*store.Reading) (float64, bool) {
	return func(r *store.Reading) (float64, bool) {
		w.Compute(r)
		return w.Value(k)
	}
}

// sourcesAsOf returns the instances of the sensor's links' sources in
// force at asOf, by source, for those the audit trail has changed (nil
// without asOf): ReadPage reads the sources as they are now.
func (s *Service) sourcesAsOf(ctx context.Context, sensor store.Sensor, asOf *time.Time) (map[int64]*store.Instance, error) {
	if asOf == nil || !sensor.Instance.Linked() {
		return nil, nil
	}
	var sources []int64
	for _, in := range sensor.Instance.Inputs {
		if l := in.Link; l != nil {
			sources = append(sources, l.SensorID)
		}
	}
	return s.db.InstancesAt(ctx, sources, *asOf)
}

// pageLinks returns the values of the sensor's linked inputs for a page,
// from what ReadPage read with it, with each source's instance as read
// there, or as known (the versions the read named), or in then when it
// has one there, and the page's first and last instants as it found
// them: the values serve the page's readings between them. ok is false
// when they cannot serve it, so that its links are read once it is
// (sensorLinks): a link's source not found (deleted meanwhile), a source
// whose value needs links of its own, one with more readings over the
// page than were read or with a flag that rejects some of them, or links
// edited between the statements.
func (s *Service) pageLinks(sensor store.Sensor, p store.LinkedPage, known, then map[int64]*store.Instance) (links []*formulas.Link, first, last time.Time, ok bool) {
	inst := sensor.Instance
	links = make([]*formulas.Link, len(inst.Inputs))
	for i, in := range inst.Inputs {
		l := in.Link
		if l == nil {
			continue
		}
		k := slices.IndexFunc(p.Links, func(pl store.PageLink) bool { return pl.Input == i })
		if k < 0 {
			return nil, first, last, false
		}
		pl := &p.Links[k]
		source := store.Sensor{ID: pl.SensorID, ProjectID: sensor.ProjectID, Instance: pl.Source}
		if pl.Known {
			if source.Instance, ok = known[pl.SensorID]; !ok {
				return nil, first, last, false
			}
		}
		if inst, ok := then[source.ID]; ok {
			source.Instance = inst
		}
		first, last = pl.Query.First, pl.Query.To
		from := later(first.Add(-l.Staleness), store.MinTime).Truncate(time.Microsecond)
		if !pl.Complete || pl.SensorID != l.SensorID || !pl.Query.From.Equal(from) {
			return nil, first, last, false
		}
		var value func(*store.Reading) (float64, bool)
		switch input, output := keyOf(source, l.Key); {
		case input != pl.Query.InputID:
			return nil, first, last, false
		case input != 0:
			value = inputValue(input)
		case output >= 0 && source.Instance.Linked():
			return nil, first, last, false
		case output >= 0:
			value = outputValue(s.outputsOf(source, nil), output)
		}
		var samples []formulas.Sample
		if value != nil {
			samples = make([]formulas.Sample, 0, len(pl.Readings))
			for r := range pl.Readings {
				if sample, ok := sampleOf(value, pl.Query.InputID != 0, &pl.Readings[r]); ok {
					samples = append(samples, sample)
				}
			}
		}
		links[i] = formulas.NewLink(samples, l.Staleness)
	}
	return links, first, last, true
}

// outputsAt returns the outputs of sensor for its readings at the instants
// at, ascending, reading its links' sources from lr with the flags in
// force now (or at asOf).
func (s *Service) outputsAt(ctx context.Context, lr linkReader, sensor store.Sensor, at []time.Time, asOf *time.Time) (*Outputs, error) {
	var links []*formulas.Link
	if len(at) > 0 && sensor.Instance.Linked() {
		var err error
		if links, err = s.sensorLinks(ctx, lr, sensor, at[0], at[len(at)-1], at, asOf, 0); err != nil {
			return nil, err
		}
	}
	return s.outputsOf(sensor, links), nil
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

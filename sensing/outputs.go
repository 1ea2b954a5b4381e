package sensing

import (
	"slices"

	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/store"
)

// Outputs computes a sensor's outputs reading after reading, for one read
// or one write, as every read and every alarm sees them: the one form of
// a sensor's outputs outside package formulas. A sensor without outputs,
// or whose stored formulas no longer compile, has Outputs that compute
// none. It counts the outputs that came to NaN or an infinity among the
// service's formula errors. It is not safe for concurrent use.
type Outputs struct {
	outputs *formulas.Outputs // nil: none
	ids     []int64
	errors  *counter
	counted int // of outputs.NonFinite(), already counted
}

// outputsOf prepares the outputs of sensor, whose linked inputs take their
// values from links (sensorLinks; nil: none); what every request of the
// instance's version shares is prepared once (formulas.Cache). Formulas
// are checked when saved, so one that does not compile now (after an
// upgrade changed the language, say) leaves the outputs empty and is
// logged, rather than fail every read of the sensor.
func (s *Service) outputsOf(sensor store.Sensor, links []*formulas.Link) *Outputs {
	inst := sensor.Instance
	if inst == nil {
		return &Outputs{}
	}
	prepared, err := s.prepared.Prepared(sensor.ID, inst.Version, func() (*formulas.Prepared, error) {
		program, err := formulas.Compile(Spec(inst))
		if err != nil {
			return nil, err
		}
		return formulas.Prepare(program, instanceOf(inst)), nil
	})
	if err != nil {
		s.log.Warn("stored formulas do not compile; outputs left out", "sensor_id", sensor.ID, "version", inst.Version, "err", err)
		s.formulaErrors.add(1)
		return &Outputs{}
	}
	return &Outputs{outputs: prepared.Outputs(links), ids: prepared.OutputIDs(), errors: s.formulaErrors}
}

// instanceOf is what formulas.Prepare takes of inst: its ids, and its
// constants' and baselines' values through time.
func instanceOf(inst *store.Instance) formulas.Instance {
	var ids formulas.Instance
	for _, in := range inst.Inputs {
		ids.InputIDs = append(ids.InputIDs, in.ID)
		ids.Baselines = append(ids.Baselines, formulas.NewFactor(dated(in.Baselines), nil, nil))
	}
	for _, o := range inst.Outputs {
		ids.OutputIDs = append(ids.OutputIDs, o.ID)
	}
	for _, c := range inst.Constants {
		ids.Constants = append(ids.Constants, formulas.NewFactor(dated(c.Calibrations), c.Value, c.Default))
	}
	return ids
}

func dated(cals []store.Calibration) []formulas.Dated {
	out := make([]formulas.Dated, len(cals))
	for i, cal := range cals {
		out[i] = formulas.Dated{From: cal.From, Value: cal.Value}
	}
	return out
}

// Spec is what the formulas of an instance may use, for formulas to
// compile.
func Spec(inst *store.Instance) formulas.Spec {
	spec := formulas.Spec{}
	for _, in := range inst.Inputs {
		spec.Inputs = append(spec.Inputs, in.Key)
	}
	for _, c := range inst.Constants {
		spec.Constants = append(spec.Constants, c.Key)
	}
	for _, o := range inst.Outputs {
		spec.Outputs = append(spec.Outputs, formulas.Output{Key: o.Key, Formula: o.Formula})
	}
	return spec
}

// Compute evaluates the outputs of r; Value then reads them.
func (o *Outputs) Compute(r *store.Reading) {
	if o.outputs == nil {
		return
	}
	o.outputs.Compute(r.Time, r.InputIDs, r.Values)
	if n := o.outputs.NonFinite(); n > o.counted {
		o.errors.add(int64(n - o.counted))
		o.counted = n
	}
}

// Value is output k of the reading last computed, if it has one.
func (o *Outputs) Value(k int) (float64, bool) {
	if o.outputs == nil {
		return 0, false
	}
	return o.outputs.Value(k)
}

// IDs is the id of each output, in the order Value takes them; none for a
// sensor whose outputs compute none.
func (o *Outputs) IDs() []int64 { return o.ids }

// only makes Compute compute the outputs of ids and the outputs they use,
// and no other (Value then has none of them): an id that is not an
// output's is ignored.
func (o *Outputs) only(ids []int64) {
	if o.outputs == nil {
		return
	}
	var ks []int
	for k, id := range o.ids {
		if slices.Contains(ids, id) {
			ks = append(ks, k)
		}
	}
	o.outputs.Only(ks)
}

// computes tells whether o computes any output.
func (o *Outputs) computes() bool { return o.outputs != nil && len(o.ids) > 0 }

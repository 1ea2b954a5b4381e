package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/store"
)

// outputsWriter computes a sensor's outputs for the readings of one
// request (formulas.Outputs) and counts, for the metrics, those that came to
// NaN or an infinity.
type outputsWriter struct {
	outputs   *formulas.Outputs // nil: no outputs
	outputIDs []int64
	errors    prometheus.Counter
	counted   int // of outputs.NonFinite(), already added to errors
}

// newOutputsWriter prepares the outputs of sensor, whose linked inputs
// take their values from links (sensorLinks; nil: none). Formulas are checked
// when saved, so one that does not compile now (after an upgrade changed the
// language, say) leaves the outputs empty and is logged, rather than fail
// every read of the sensor.
func (s *Server) newOutputsWriter(sensor store.Sensor, links []*formulas.Link) *outputsWriter {
	inst := sensor.Instance
	if inst == nil {
		return &outputsWriter{}
	}
	program, err := s.programs.Program(sensor.ID, inst.Version, instanceSpec(inst))
	if err != nil {
		s.log.Warn("stored formulas do not compile; outputs left out", "sensor_id", sensor.ID, "version", inst.Version, "err", err)
		s.metrics.formulaErrors.Inc()
		return &outputsWriter{}
	}
	ids := formulas.Instance{Links: links}
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
	return &outputsWriter{outputs: formulas.NewOutputs(program, ids), outputIDs: ids.OutputIDs, errors: s.metrics.formulaErrors}
}

func dated(cals []store.Calibration) []formulas.Dated {
	out := make([]formulas.Dated, len(cals))
	for i, cal := range cals {
		out[i] = formulas.Dated{From: cal.From, Value: cal.Value}
	}
	return out
}

// Compute evaluates the outputs of r; Value then reads them.
func (w *outputsWriter) Compute(r *store.Reading) {
	if w.outputs == nil {
		return
	}
	w.outputs.Compute(r.Time, r.InputIDs, r.Values)
	if n := w.outputs.NonFinite(); n > w.counted {
		w.errors.Add(float64(n - w.counted))
		w.counted = n
	}
}

// Value is output k of the reading last computed, if it has one.
func (w *outputsWriter) Value(k int) (float64, bool) {
	if w.outputs == nil {
		return 0, false
	}
	return w.outputs.Value(k)
}

// appendOutputs computes r's outputs and appends ,"outputs":{…}, named
// by names.
func (w *outputsWriter) appendOutputs(b []byte, r *store.Reading, names keyNames) []byte {
	w.Compute(r)
	b = append(b, `,"outputs":{`...)
	first := true
	for k, id := range w.outputIDs {
		v, ok := w.Value(k)
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = names.appendKey(b, id)
		b = append(b, ':')
		b = appendNumber(b, v)
	}
	return append(b, '}')
}

// IDs is the id of each output, in the order Value takes them.
func (w *outputsWriter) IDs() []int64 { return w.outputIDs }

package server

import (
	"cmp"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/store"
)

// programCache keeps each sensor's compiled formulas for the instance
// version they were compiled from, so a request compiles at most once per
// instance and most compile nothing.
type programCache struct {
	mu       sync.Mutex
	programs map[int64]cachedProgram // by sensor id
}

type cachedProgram struct {
	version int64
	program *formulas.Program
}

// Enough for every sensor of a large deployment; past it the cache starts
// over rather than grow without bound.
const maxCachedPrograms = 100_000

func (c *programCache) get(sensorID int64, inst *store.Instance) (*formulas.Program, error) {
	c.mu.Lock()
	cached, ok := c.programs[sensorID]
	c.mu.Unlock()
	if ok && cached.version == inst.Version {
		return cached.program, nil
	}
	p, err := formulas.Compile(instanceSpec(inst))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.programs == nil || len(c.programs) >= maxCachedPrograms {
		c.programs = make(map[int64]cachedProgram)
	}
	c.programs[sensorID] = cachedProgram{version: inst.Version, program: p}
	c.mu.Unlock()
	return p, nil
}

// outputsWriter computes a sensor's outputs for each reading of a request.
// The constants' dated values are resolved here, once per request, not per
// reading from the database.
type outputsWriter struct {
	eval      *formulas.Evaluator // nil: no outputs
	inputs    []inputSlot         // by id
	factors   []formulas.Factor   // by constant
	outputIDs []int64             // by output
	errors    prometheus.Counter
	counted   int // of eval.NonFinite(), already added to errors
}

type inputSlot struct {
	id    int64
	index int
}

// newOutputsWriter prepares the outputs of sensor. Formulas are checked
// when saved, so one that does not compile now (after an upgrade changed the
// language, say) leaves the outputs empty and is logged, rather than fail
// every read of the sensor.
func (s *Server) newOutputsWriter(sensor store.Sensor) *outputsWriter {
	inst := sensor.Instance
	if inst == nil {
		return &outputsWriter{}
	}
	program, err := s.programs.get(sensor.ID, inst)
	if err != nil {
		s.log.Warn("stored formulas do not compile; outputs left out", "sensor_id", sensor.ID, "version", inst.Version, "err", err)
		s.metrics.formulaErrors.Inc()
		return &outputsWriter{}
	}
	w := &outputsWriter{eval: program.NewEvaluator(), errors: s.metrics.formulaErrors}
	for i, in := range inst.Inputs {
		w.inputs = append(w.inputs, inputSlot{id: in.ID, index: i})
	}
	slices.SortFunc(w.inputs, func(a, b inputSlot) int { return cmp.Compare(a.id, b.id) })
	for _, c := range inst.Constants {
		dated := make([]formulas.Dated, len(c.Calibrations))
		for i, cal := range c.Calibrations {
			dated[i] = formulas.Dated{From: cal.From, Value: cal.Value}
		}
		w.factors = append(w.factors, formulas.NewFactor(dated, c.Value, c.Default))
	}
	for _, o := range inst.Outputs {
		w.outputIDs = append(w.outputIDs, o.ID)
	}
	return w
}

// compute evaluates the outputs of r; value then reads them.
func (w *outputsWriter) compute(r *store.Reading) {
	if w.eval == nil {
		return
	}
	w.eval.Reset()
	// Both the reading's inputs and the instance's are sorted by id: one
	// pass pairs them.
	j := 0
	for i, id := range r.InputIDs {
		for j < len(w.inputs) && w.inputs[j].id < id {
			j++
		}
		if j < len(w.inputs) && w.inputs[j].id == id {
			w.eval.SetInput(w.inputs[j].index, r.Values[i])
		}
	}
	for k := range w.factors {
		if v, ok := w.factors[k].At(r.Time); ok {
			w.eval.SetConstant(k, v)
		}
	}
	w.eval.Run()
	if n := w.eval.NonFinite(); n > w.counted {
		w.errors.Add(float64(n - w.counted))
		w.counted = n
	}
}

// value is output k of the reading last computed, if it has one.
func (w *outputsWriter) value(k int) (float64, bool) {
	if w.eval == nil {
		return 0, false
	}
	return w.eval.Output(k)
}

// appendOutputs computes r's outputs and appends ,"outputs":{…}.
func (w *outputsWriter) appendOutputs(b []byte, r *store.Reading) []byte {
	w.compute(r)
	b = append(b, `,"outputs":{`...)
	first := true
	for k, id := range w.outputIDs {
		v, ok := w.value(k)
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `":`...)
		b = appendNumber(b, v)
	}
	return append(b, '}')
}

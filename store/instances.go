package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// Instance is a sensor's own copy of a blueprint: its inputs and outputs
// with ids unique in the service, its formulas, constants and dated
// calibrations. Version goes up with every change, so a compiled form can be
// cached by (sensor, version).
type Instance struct {
	Version   int64              `json:"version"`
	Inputs    []InstanceInput    `json:"inputs"`
	Outputs   []InstanceOutput   `json:"outputs"`
	Constants []InstanceConstant `json:"constants"`
}

// InstanceInput is an input of an instance, with its baseline: the values
// formulas compare readings with, each from an instant on.
type InstanceInput struct {
	ID        int64         `json:"id"`
	Key       string        `json:"key"`
	Name      string        `json:"name"`
	Unit      string        `json:"unit"`
	Baselines []Calibration `json:"baselines,omitempty"`
	Link      *InputLink    `json:"link,omitempty"` // nil: the reading's own value
}

// InstanceOutput is an output of an instance and its formula, with its
// blueprint's decimals.
type InstanceOutput struct {
	ID       int64  `json:"id"`
	Key      string `json:"key"`
	Name     string `json:"name"`
	Unit     string `json:"unit"`
	Formula  string `json:"formula"`
	Decimals *int   `json:"decimals,omitempty"`
}

// InstanceConstant is a constant of an instance: the blueprint's default,
// the sensor's undated value and its dated values, any of which may be
// missing.
type InstanceConstant struct {
	Key          string        `json:"key"`
	Name         string        `json:"name"`
	Unit         string        `json:"unit"`
	Default      *float64      `json:"default,omitempty"`
	Value        *float64      `json:"value,omitempty"`
	Calibrations []Calibration `json:"calibrations,omitempty"`
}

// Calibration is a constant's value from an instant on.
type Calibration struct {
	From  time.Time `json:"from"`
	Value float64   `json:"value"`
}

// Clone returns a copy of inst that shares nothing with it.
func (inst Instance) Clone() Instance {
	c := inst
	c.Inputs = slices.Clone(inst.Inputs)
	c.Outputs = slices.Clone(inst.Outputs)
	c.Constants = slices.Clone(inst.Constants)
	for i := range c.Inputs {
		c.Inputs[i].Baselines = slices.Clone(c.Inputs[i].Baselines)
		if l := c.Inputs[i].Link; l != nil {
			link := *l
			c.Inputs[i].Link = &link
		}
	}
	for i := range c.Constants {
		c.Constants[i].Calibrations = slices.Clone(c.Constants[i].Calibrations)
	}
	return c
}

// SetConstants sets the undated values of the constants values names; a
// nil value removes the sensor's own, so that the default applies again. It
// returns Invalid for a key that is not a constant of inst.
func (inst *Instance) SetConstants(values map[string]*float64) error {
	for _, key := range sortedKeys(values) {
		i := slices.IndexFunc(inst.Constants, func(c InstanceConstant) bool { return c.Key == key })
		if i < 0 {
			return inst.notAConstant(key)
		}
		if v := values[key]; v != nil {
			value := *v
			inst.Constants[i].Value = &value
		} else {
			inst.Constants[i].Value = nil
		}
	}
	return nil
}

// Values turns undated constant values into SetConstants' form.
func Values(values map[string]float64) map[string]*float64 {
	out := make(map[string]*float64, len(values))
	for key, v := range values {
		out[key] = &v
	}
	return out
}

func (inst *Instance) notAConstant(key string) error {
	return &apperr.Error{
		Code:    apperr.Invalid,
		Message: fmt.Sprintf("constant %q is not one of the sensor's constants (%s)", key, inst.constantKeys()),
		Details: map[string]any{"constant": key},
	}
}

// SetFormulas replaces the formulas of the outputs formulas names. It
// returns Invalid for a key that is not an output of inst.
func (inst *Instance) SetFormulas(formulas map[string]string) error {
	for _, key := range sortedKeys(formulas) {
		i := slices.IndexFunc(inst.Outputs, func(o InstanceOutput) bool { return o.Key == key })
		if i < 0 {
			keys := make([]string, len(inst.Outputs))
			for j, o := range inst.Outputs {
				keys[j] = o.Key
			}
			return &apperr.Error{
				Code:    apperr.Invalid,
				Message: fmt.Sprintf("output %q is not one of the sensor's outputs (%s)", key, strings.Join(keys, ", ")),
				Details: map[string]any{"output": key},
			}
		}
		inst.Outputs[i].Formula = formulas[key]
	}
	return nil
}

// SetCalibrations replaces the dated values of the constants calibrations
// names. It returns Invalid for a key that is not a constant of inst, or
// two values from one instant.
func (inst *Instance) SetCalibrations(calibrations map[string][]Calibration) error {
	for _, key := range sortedKeys(calibrations) {
		i := slices.IndexFunc(inst.Constants, func(c InstanceConstant) bool { return c.Key == key })
		if i < 0 {
			return inst.notAConstant(key)
		}
		dated := slices.SortedFunc(slices.Values(calibrations[key]), func(a, b Calibration) int { return a.From.Compare(b.From) })
		for j := 1; j < len(dated); j++ {
			if dated[j].From.Equal(dated[j-1].From) {
				return &apperr.Error{
					Code:    apperr.Invalid,
					Message: fmt.Sprintf("constant %q has two values from %s", key, dated[j].From.UTC().Format(time.RFC3339Nano)),
					Details: map[string]any{"constant": key},
				}
			}
		}
		inst.Constants[i].Calibrations = dated
	}
	return nil
}

// Baseline is the values of some inputs, by key, from an instant on.
type Baseline struct {
	From   time.Time
	Values map[string]float64
}

// SetBaselines replaces every input's baselines with baselines: an input
// takes, for each reading, its value in the latest baseline from at or
// before the reading's datetime that has one. It returns Invalid for a key
// that is not an input of inst, or two baselines from one instant.
func (inst *Instance) SetBaselines(baselines []Baseline) error {
	dated := slices.SortedFunc(slices.Values(baselines), func(a, b Baseline) int { return a.From.Compare(b.From) })
	for j := 1; j < len(dated); j++ {
		if dated[j].From.Equal(dated[j-1].From) {
			from := dated[j].From.UTC().Format(time.RFC3339Nano)
			return &apperr.Error{
				Code:    apperr.Invalid,
				Message: fmt.Sprintf("two baselines from %s; a baseline replaces the one before it from its own instant", from),
				Details: map[string]any{"from": from},
			}
		}
	}
	for i := range inst.Inputs {
		inst.Inputs[i].Baselines = nil
	}
	for _, b := range dated {
		for _, key := range sortedKeys(b.Values) {
			i := slices.IndexFunc(inst.Inputs, func(in InstanceInput) bool { return in.Key == key })
			if i < 0 {
				return inst.notAnInput(key)
			}
			inst.Inputs[i].Baselines = append(inst.Inputs[i].Baselines, Calibration{From: b.From, Value: b.Values[key]})
		}
	}
	return nil
}

func (inst *Instance) notAnInput(key string) error {
	return &apperr.Error{
		Code:    apperr.Invalid,
		Message: fmt.Sprintf("input %q is not one of the sensor's inputs; its inputs are %s", key, inst.inputList()),
		Details: map[string]any{"input": key},
	}
}

func (inst *Instance) constantKeys() string {
	keys := make([]string, len(inst.Constants))
	for i, c := range inst.Constants {
		keys[i] = c.Key
	}
	if len(keys) == 0 {
		return "it has none"
	}
	return strings.Join(keys, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// InputIDs are the ids of the instance's inputs, ascending, as a reading
// holds them; nil without an instance.
func (inst *Instance) InputIDs() []int64 {
	if inst == nil {
		return nil
	}
	ids := make([]int64, len(inst.Inputs))
	for i, in := range inst.Inputs {
		ids[i] = in.ID
	}
	slices.Sort(ids)
	return ids
}

// CheckInputs returns Invalid, naming the reading and the id, when a
// reading has an input that is not one of inst's; nil inst accepts any.
func (inst *Instance) CheckInputs(readings []Reading) error {
	if inst == nil {
		return nil
	}
	allowed := make(map[int64]bool, len(inst.Inputs))
	for _, in := range inst.Inputs {
		allowed[in.ID] = true
	}
	var last []int64
	for i, r := range readings {
		if SameIDs(r.InputIDs, last) {
			continue // checked with the reading before
		}
		last = r.InputIDs
		for _, id := range r.InputIDs {
			if !allowed[id] {
				return &apperr.Error{
					Code:    apperr.Invalid,
					Message: fmt.Sprintf("element %d: input %d is not an input of this sensor; its inputs are %s", i, id, inst.inputList()),
					Details: map[string]any{"index": i, "input_id": id},
				}
			}
		}
	}
	return nil
}

// CheckInputIDs is CheckInputs for a stream's ids, which name no element.
func (inst *Instance) CheckInputIDs(ids []int64) error {
	if inst == nil {
		return nil
	}
	for _, id := range ids {
		if !slices.ContainsFunc(inst.Inputs, func(in InstanceInput) bool { return in.ID == id }) {
			return &apperr.Error{
				Code:    apperr.Invalid,
				Message: fmt.Sprintf("input %d is not an input of this sensor; its inputs are %s", id, inst.inputList()),
				Details: map[string]any{"input_id": id},
			}
		}
	}
	return nil
}

func (inst *Instance) inputList() string {
	parts := make([]string, len(inst.Inputs))
	for i, in := range inst.Inputs {
		parts[i] = fmt.Sprintf("%d (%s)", in.ID, in.Key)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// giveIDs gives every input and output of inst a new id.
func giveIDs(ctx context.Context, tx pgx.Tx, inst *Instance) error {
	n := len(inst.Inputs) + len(inst.Outputs)
	rows, _ := tx.Query(ctx, `SELECT nextval('instance_port_ids') FROM generate_series(1, $1)`, n)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	for i := range inst.Inputs {
		inst.Inputs[i].ID = ids[i]
	}
	for i := range inst.Outputs {
		inst.Outputs[i].ID = ids[len(inst.Inputs)+i]
	}
	return nil
}

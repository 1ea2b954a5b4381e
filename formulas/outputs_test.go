package formulas_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sensorreadings/readings/formulas"
)

func ptr[T any](v T) *T { return &v }

// TestOutputs computes the piezometer's outputs as a request does: readings
// keyed by the instance's ids, a dated gauge factor, and an input the
// sensor does not have.
func TestOutputs(t *testing.T) {
	spec := formulas.Spec{
		Inputs:    []string{"freq", "temp"},
		Constants: []string{"G", "R0"},
		Outputs: []formulas.Output{
			{Key: "digits", Formula: "freq^2 / 1000"},
			{Key: "pressure", Formula: "G * (R0 - digits)"},
		},
	}
	p, err := formulas.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	june := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	o := formulas.NewOutputs(p, formulas.Instance{
		InputIDs:  []int64{105, 106},
		OutputIDs: []int64{107, 108},
		Constants: []formulas.Factor{
			formulas.NewFactor([]formulas.Dated{{From: june, Value: 0.125}}, ptr(0.12), ptr(0.1)),
			formulas.NewFactor(nil, ptr(9000.0), nil),
		},
	})
	tests := []struct {
		name           string
		at             time.Time
		ids            []int64
		values         []float64
		digits, kPa    float64
		hasDigits, has bool
	}{
		{"BeforeCalibration", june.AddDate(0, -1, 0), []int64{105, 106}, []float64{2800, 11}, 7840, 139.2, true, true},
		{"CalibrationInForce", june, []int64{105}, []float64{2700}, 7290, 213.75, true, true},
		{"ForeignInputIgnored", june, []int64{1, 105, 999}, []float64{5, 2700, 5}, 7290, 213.75, true, true},
		{"MissingInput", june, []int64{106}, []float64{11}, 0, 0, false, false},
		{"OtherInputAsMany", june, []int64{105}, []float64{2700}, 7290, 213.75, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o.Compute(tt.at, tt.ids, tt.values)
			if v, ok := o.Value(0); ok != tt.hasDigits || (ok && v != tt.digits) {
				t.Errorf("digits = %v, %v; want %v, %v", v, ok, tt.digits, tt.hasDigits)
			}
			if v, ok := o.Value(1); ok != tt.has || (ok && v != tt.kPa) {
				t.Errorf("pressure = %v, %v; want %v, %v", v, ok, tt.kPa, tt.has)
			}
		})
	}
	if got, want := o.IDs(), []int64{107, 108}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("IDs() = %v, want %v", got, want)
	}
}

// TestCachePrepared prepares once per version: the same version is the
// same Prepared, a new version prepares the new formulas; an error is not
// kept.
func TestCachePrepared(t *testing.T) {
	var cache formulas.Cache
	prepare := func(formula string, calls *int) func() (*formulas.Prepared, error) {
		return func() (*formulas.Prepared, error) {
			*calls++
			p, err := formulas.Compile(formulas.Spec{Inputs: []string{"x"}, Outputs: []formulas.Output{{Key: "y", Formula: formula}}})
			if err != nil {
				return nil, err
			}
			return formulas.Prepare(p, formulas.Instance{InputIDs: []int64{1}, OutputIDs: []int64{2}}), nil
		}
	}
	var calls int
	v1, err := cache.Prepared(1, 1, prepare("x * 2", &calls))
	if err != nil {
		t.Fatal(err)
	}
	again, err := cache.Prepared(1, 1, prepare("x * 3", &calls))
	if err != nil {
		t.Fatal(err)
	}
	if again != v1 || calls != 1 {
		t.Errorf("Prepared(1, 1) twice prepared %d times; want once, the second call the cached Prepared", calls)
	}
	v2, err := cache.Prepared(1, 2, prepare("x * 3", &calls))
	if err != nil {
		t.Fatal(err)
	}
	o := v2.Outputs(nil)
	o.Compute(time.Now(), []int64{1}, []float64{5})
	if got, ok := o.Value(0); !ok || got != 15 {
		t.Errorf("version 2's y = %v, %v; want 15", got, ok)
	}
	for range 2 {
		if _, err := cache.Prepared(1, 3, prepare("x *", &calls)); err == nil {
			t.Errorf("Prepared of a formula that does not parse = nil error, want Invalid")
		}
	}
	if calls != 4 {
		t.Errorf("%d preparations, want 4: an error is not kept", calls)
	}
}

// TestPreparedShared computes with one Prepared from several goroutines
// at once, as concurrent requests of a sensor do, some narrowed by Only:
// each computes its own values (run with -race for what it shares).
func TestPreparedShared(t *testing.T) {
	p, err := formulas.Compile(formulas.Spec{
		Inputs:    []string{"x", "y"},
		Constants: []string{"k"},
		Outputs:   []formulas.Output{{Key: "a", Formula: "x * k"}, {Key: "b", Formula: "a + y"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	prepared := formulas.Prepare(p, formulas.Instance{
		InputIDs:  []int64{1, 2},
		OutputIDs: []int64{3, 4},
		Constants: []formulas.Factor{formulas.NewFactor([]formulas.Dated{{From: day, Value: 3}}, ptr(2.0), nil)},
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			o := prepared.Outputs(nil)
			if g%2 == 1 {
				o.Only([]int{0})
			}
			for i := range 1000 {
				at, k := day.Add(-time.Hour), 2.0
				if i%3 == 0 {
					at, k = day, 3
				}
				x := float64(i + g)
				ids := []int64{1, 2}
				if i%5 == 0 {
					ids = []int64{1}
				}
				o.Compute(at, ids, []float64{x, 1}[:len(ids)])
				if got, ok := o.Value(0); !ok || got != x*k {
					t.Errorf("goroutine %d, reading %d: a = %v, %v; want %v", g, i, got, ok, x*k)
					return
				}
				_, hasB := o.Value(1)
				if want := g%2 == 0 && len(ids) == 2; hasB != want {
					t.Errorf("goroutine %d, reading %d: b computed %v, want %v", g, i, hasB, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestBaselines computes the vibrating-wire formula from each input's dated
// baseline: a re-zeroed instrument keeps its history on both sides, a
// reading before any baseline has no output, and a declared key named like
// a baseline keeps its own meaning.
func TestBaselines(t *testing.T) {
	spec := formulas.Spec{
		Inputs:    []string{"freq", "temp"},
		Constants: []string{"G", "temp0"},
		Outputs: []formulas.Output{
			{Key: "pressure", Formula: "G * (freq0^2 - freq^2) / 1000"},
			{Key: "dt", Formula: "temp - temp0"},
		},
	}
	p, err := formulas.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	may, june := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	o := formulas.NewOutputs(p, formulas.Instance{
		InputIDs:  []int64{1, 2},
		OutputIDs: []int64{3, 4},
		Constants: []formulas.Factor{formulas.NewFactor(nil, ptr(0.1), nil), formulas.NewFactor(nil, ptr(20.0), nil)},
		Baselines: []formulas.Factor{
			formulas.NewFactor([]formulas.Dated{{From: may, Value: 3000}, {From: june, Value: 2900}}, nil, nil),
			formulas.NewFactor([]formulas.Dated{{From: may, Value: 5}}, nil, nil),
		},
	})
	for _, tt := range []struct {
		name        string
		at          time.Time
		pressure    float64
		hasPressure bool
	}{
		{"BeforeAnyBaseline", may.Add(-time.Microsecond), 0, false},
		{"FirstBaseline", may, 0.1 * (3000*3000 - 2800*2800) / 1000, true},
		{"AMicrosecondBeforeTheRezero", june.Add(-time.Microsecond), 0.1 * (3000*3000 - 2800*2800) / 1000, true},
		{"AfterTheRezero", june, 0.1 * (2900*2900 - 2800*2800) / 1000, true},
	} {
		o.Compute(tt.at, []int64{1, 2}, []float64{2800, 21})
		if v, ok := o.Value(0); ok != tt.hasPressure || (ok && v != tt.pressure) {
			t.Errorf("%s: pressure = %v, %v; want %v, %v", tt.name, v, ok, tt.pressure, tt.hasPressure)
		}
		// temp0 is the declared constant 20, not temp's baseline 5.
		if v, ok := o.Value(1); !ok || v != 1 {
			t.Errorf("%s: dt = %v, %v; want 1 from the declared temp0", tt.name, v, ok)
		}
	}
}

// TestOutputsOnly computes what a rule on one output needs: that output
// and the outputs it uses, with the constants they read, and no other.
func TestOutputsOnly(t *testing.T) {
	spec := formulas.Spec{
		Inputs:    []string{"freq", "temp"},
		Constants: []string{"G", "R0", "K"},
		Outputs: []formulas.Output{
			{Key: "corrected", Formula: "pressure + K * (temp - 20)"},
			{Key: "digits", Formula: "freq^2 / 1000"},
			{Key: "pressure", Formula: "G * (R0 - digits)"},
			{Key: "warm", Formula: "temp - 20"},
		},
	}
	p, err := formulas.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	newOutputs := func() *formulas.Outputs {
		return formulas.NewOutputs(p, formulas.Instance{
			InputIDs:  []int64{1, 2},
			OutputIDs: []int64{3, 4, 5, 6},
			Constants: []formulas.Factor{formulas.NewFactor(nil, ptr(0.5), nil), formulas.NewFactor(nil, ptr(9000.0), nil), formulas.NewFactor(nil, ptr(2.0), nil)},
		})
	}
	all := newOutputs()
	all.Compute(time.Now(), []int64{1, 2}, []float64{2000, 25})
	for _, tt := range []struct {
		name     string
		only     []int
		computed []bool // by output
	}{
		{"None", nil, []bool{false, false, false, false}},
		{"AnInputsOutput", []int{1}, []bool{false, true, false, false}},
		{"WhatItUses", []int{2}, []bool{false, true, true, false}},
		{"ThroughTwoOutputs", []int{0}, []bool{true, true, true, false}},
		{"Two", []int{3, 1}, []bool{false, true, false, true}},
	} {
		o := newOutputs()
		o.Only(tt.only)
		o.Compute(time.Now(), []int64{1, 2}, []float64{2000, 25})
		for k, want := range tt.computed {
			got, ok := o.Value(k)
			if wantV, _ := all.Value(k); ok != want || ok && got != wantV {
				t.Errorf("%s: output %d = %v, %v; want %v, %v", tt.name, k, got, ok, wantV, want)
			}
		}
	}
}

// TestOutputsFollowDatedValues computes readings in time order, backwards
// and at random, with one Outputs, as a read reuses it, and each with a
// fresh one: the values in force at each reading, not at the reading
// before, whatever the order and around each change, and after Only.
func TestOutputsFollowDatedValues(t *testing.T) {
	spec := formulas.Spec{
		Inputs:    []string{"x"},
		Constants: []string{"a", "b", "c"},
		Outputs:   []formulas.Output{{Key: "y", Formula: "a * x + b"}, {Key: "z", Formula: "c"}},
	}
	p, err := formulas.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	day := func(d int) time.Time { return time.Date(2024, 1, d, 0, 0, 0, 0, time.UTC) }
	inst := formulas.Instance{
		InputIDs:  []int64{1},
		OutputIDs: []int64{2, 3},
		Constants: []formulas.Factor{
			formulas.NewFactor([]formulas.Dated{{From: day(5), Value: 2}, {From: day(9), Value: 3}}, nil, ptr(1.0)),
			formulas.NewFactor([]formulas.Dated{{From: day(7), Value: 10}}, nil, nil), // none before the 7th
			formulas.NewFactor([]formulas.Dated{{From: day(3), Value: -1}, {From: day(12), Value: -2}}, ptr(-3.0), nil),
		},
	}
	var at []time.Time
	for d := 1; d <= 14; d++ {
		at = append(at, day(d).Add(-time.Microsecond), day(d), day(d).Add(time.Hour))
	}
	backwards := slices.Clone(at)
	slices.Reverse(backwards)
	shuffled := slices.Clone(at)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, only := range [][]int{nil, {1}, {0}} {
		for name, order := range map[string][]time.Time{"Forward": at, "Backward": backwards, "Shuffled": shuffled} {
			reused := formulas.NewOutputs(p, inst)
			if only != nil {
				// A span resolved for the other output before Only.
				reused.Only([]int{1 - only[0]})
				reused.Compute(order[0], []int64{1}, []float64{1})
				reused.Only(only)
			}
			for _, ts := range order {
				fresh := formulas.NewOutputs(p, inst)
				if only != nil {
					fresh.Only(only)
				}
				reused.Compute(ts, []int64{1}, []float64{4})
				fresh.Compute(ts, []int64{1}, []float64{4})
				for k := range 2 {
					got, gotOK := reused.Value(k)
					want, wantOK := fresh.Value(k)
					if gotOK != wantOK || (gotOK && got != want) {
						t.Fatalf("only %v, %s, at %v: output %d = %v, %v; want %v, %v", only, name, ts, k, got, gotOK, want, wantOK)
					}
				}
			}
		}
	}
}

package formulas

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// benchSpec is a five-output vibrating-wire piezometer: the shape the
// performance target is stated for.
var benchSpec = Spec{
	Inputs:    []string{"freq", "temp"},
	Constants: []string{"G", "R0", "K"},
	Outputs: []Output{
		{"digits", "freq^2 / 1000"},
		{"pressure", "G * (R0 - digits)"},
		{"corrected", "pressure + K * (temp - 20)"},
		{"head", "pressure / 9.80665"},
		{"alarm", "abs(pressure) > 150 ? 1 : 0"},
	},
}

type benchReading struct{ freq, temp float64 }

func benchReadings() []benchReading {
	r := rand.New(rand.NewPCG(1, 2))
	readings := make([]benchReading, 1000)
	for i := range readings {
		readings[i] = benchReading{2500 + r.Float64()*600, 5 + r.Float64()*20}
	}
	return readings
}

// BenchmarkEvaluate evaluates the five outputs over a batch of 1,000
// readings, as a page of readings with outputs=true does.
func BenchmarkEvaluate(b *testing.B) {
	p, err := Compile(benchSpec)
	if err != nil {
		b.Fatal(err)
	}
	readings := benchReadings()
	e := p.NewEvaluator()
	var sink float64
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range readings {
			e.Reset()
			e.SetInput(0, r.freq)
			e.SetInput(1, r.temp)
			e.SetConstant(0, 0.1)
			e.SetConstant(1, 9000)
			e.SetConstant(2, 0.05)
			e.Run()
			for k := range p.Outputs() {
				v, _ := e.Output(k)
				sink += v
			}
		}
	}
	reportPerOutput(b, len(readings)*len(benchSpec.Outputs))
	_ = sink
}

// BenchmarkEvaluateExprVM is the same work on expr's own virtual machine,
// the baseline that the closure compiler of this package is measured
// against.
func BenchmarkEvaluateExprVM(b *testing.B) {
	env := map[string]any{"freq": 0.0, "temp": 0.0, "G": 0.0, "R0": 0.0, "K": 0.0}
	for _, o := range benchSpec.Outputs {
		env[o.Key] = 0.0
	}
	programs := make([]*vm.Program, len(benchSpec.Outputs))
	for i, o := range benchSpec.Outputs {
		var err error
		if programs[i], err = expr.Compile(o.Formula, expr.Env(env), expr.AsFloat64()); err != nil {
			b.Fatal(err)
		}
	}
	readings := benchReadings()
	var machine vm.VM
	var sink float64
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range readings {
			env["freq"], env["temp"] = r.freq, r.temp
			env["G"], env["R0"], env["K"] = 0.1, 9000.0, 0.05
			for i, p := range programs {
				v, err := machine.Run(p, env)
				if err != nil {
					b.Fatal(err)
				}
				env[benchSpec.Outputs[i].Key] = v
				sink += v.(float64)
			}
		}
	}
	reportPerOutput(b, len(readings)*len(benchSpec.Outputs))
	_ = sink
}

func reportPerOutput(b *testing.B, outputsPerOp int) {
	nsPerOutput := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(outputsPerOp)
	b.ReportMetric(nsPerOutput, "ns/output")
	b.ReportMetric(1e3/nsPerOutput, "Moutputs/s")
}

// BenchmarkOutputsCompute computes the same outputs through Outputs, as a
// long read with outputs does: readings 10 s apart, a dated gauge factor
// and undated constants; the readings of the two inputs the formulas read
// (TwoInputs), and of ten, as row 6b of `make bench` (TenInputs).
func BenchmarkOutputsCompute(b *testing.B) {
	for _, inputs := range []int{2, 10} {
		b.Run(map[int]string{2: "TwoInputs", 10: "TenInputs"}[inputs], func(b *testing.B) {
			spec := benchSpec
			ids := []int64{1, 2}
			for i := 3; i <= inputs; i++ {
				spec.Inputs = append(slices.Clip(spec.Inputs), fmt.Sprintf("x%d", i))
				ids = append(ids, int64(i))
			}
			p, err := Compile(spec)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			value := func(v float64) *float64 { return &v }
			o := NewOutputs(p, Instance{
				InputIDs:  ids,
				OutputIDs: []int64{101, 102, 103, 104, 105},
				Constants: []Factor{
					NewFactor([]Dated{{From: start.AddDate(0, -1, 0), Value: 0.1}, {From: start.AddDate(0, 1, 0), Value: 0.11}}, value(0.09), nil),
					NewFactor(nil, value(9000), nil),
					NewFactor(nil, nil, value(0.05)),
				},
			})
			readings := benchReadings()
			values := make([]float64, inputs)
			var sink float64
			b.ReportAllocs()
			for b.Loop() {
				for i, r := range readings {
					values[0], values[1] = r.freq, r.temp
					o.Compute(start.Add(time.Duration(i)*10*time.Second), ids, values)
					for k := range p.Outputs() {
						v, _ := o.Value(k)
						sink += v
					}
				}
			}
			reportPerOutput(b, len(readings)*len(benchSpec.Outputs))
			_ = sink
		})
	}
}

package formulas

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
)

// eval compiles one output over inputs x, y and constant k and evaluates it
// with x=2, y=-3, k=10.
func eval(t *testing.T, formula string) (float64, bool) {
	t.Helper()
	p, err := Compile(Spec{Inputs: []string{"x", "y"}, Constants: []string{"k"}, Outputs: []Output{{"out", formula}}})
	if err != nil {
		t.Fatalf("Compile(%q): %v", formula, err)
	}
	e := p.NewEvaluator()
	e.Reset()
	e.SetInput(0, 2)
	e.SetInput(1, -3)
	e.SetConstant(0, 10)
	e.Run()
	return e.Output(0)
}

var evaluateTests = []struct {
	formula string
	want    float64
}{
	// Operators and precedence.
	{"1 + 2 * 3", 7},
	{"(1 + 2) * 3", 9},
	{"10 - 4 - 3", 3},
	{"2 ^ 3 ^ 2", 512}, // right-associative
	{"2 ** 3", 8},
	{"-2 ^ 2", -4}, // power before unary minus, as in mathematics
	{"(-2) ^ 2", 4},
	{"x ^ 3", 8},
	{"x ^ 0.5", math.Sqrt2},
	{"7 / 2", 3.5},
	{"7 % 3", 1},
	{"7.5 % 2", 1.5},
	{"-7 % 3", -1}, // the sign of the dividend, as in JavaScript
	{"x % 0.75", 0.5},
	{"-x", -2},
	{"+x", 2},
	{"- -x", 2},
	{"x * y + k", 4},
	{"k / x / 5", 1},
	{"1e3 + .5", 1000.5},
	{"1_000", 1000},
	// Comparisons, logic and the conditional.
	{"x > 1 ? 10 : 20", 10},
	{"x >= 2 ? 1 : 0", 1},
	{"x < 2 ? 1 : 0", 0},
	{"x <= 2 ? 1 : 0", 1},
	{"x == 2 ? 1 : 0", 1},
	{"x != 2 ? 1 : 0", 0},
	{"x > 1 && y > 0 ? 1 : 0", 0},
	{"x > 1 || y > 0 ? 1 : 0", 1},
	{"!(x > 1) ? 1 : 0", 0},
	{"not (x > 1) ? 1 : 0", 0},
	{"x > 1 and y < 0 ? 1 : 0", 1},
	{"y < 0 ? (x > 5 ? 1 : 2) : 3", 2},
	{"true ? x : y", 2},
	// Functions, plain and through Math.
	{"abs(y)", 3},
	{"Math.abs(y)", 3},
	{"sqrt(16)", 4},
	{"Math.sqrt(x * 8)", 4},
	{"pow(x, 10)", 1024},
	{"Math.pow(2, -1)", 0.5},
	{"exp(0)", 1},
	{"ln(Math.E)", 1},
	{"Math.log(Math.E ^ 2)", 2},
	{"log10(1000)", 3},
	{"Math.log10(0.01)", -2},
	{"log2(8)", 3},
	{"sin(0)", 0},
	{"cos(0)", 1},
	{"Math.tan(0)", 0},
	{"asin(1)", math.Pi / 2},
	{"acos(1)", 0},
	{"atan(1)", math.Pi / 4},
	{"atan2(1, 1)", math.Pi / 4},
	{"Math.atan2(0, -1)", math.Pi},
	{"Math.PI", math.Pi},
	{"Math.E", math.E},
	{"min(x, y)", -3},
	{"max(x, y, k)", 10},
	{"Math.min(5)", 5},
	{"min(4, 3, 9, 1, 7)", 1},
	{"round(2.5)", 3},
	{"round(-2.5)", -2}, // JavaScript: ties towards +∞
	{"round(0.49999999999999994)", 0},
	{"Math.round(-0.4)", 0},
	{"floor(-1.5)", -2},
	{"ceil(-1.5)", -1},
	{"trunc(-1.5)", -1},
	{"sign(y)", -1},
	{"cbrt(27)", 3},
	{"hypot(3, 4)", 5},
	{"clamp(k, 0, 5)", 5},
	{"clamp(y, 0, 5)", 0},
	{"Math.clamp(x, 0, 5)", 2},
	{"sqrt(x) | round()", 1}, // expr's pipe is a call
}

func TestEvaluate(t *testing.T) {
	for _, tt := range evaluateTests {
		got, ok := eval(t, tt.formula)
		if !ok || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s = %v (ok=%v), want %v", tt.formula, got, ok, tt.want)
		}
	}
}

// TestEvaluateOperands computes each operator over each shape of its
// operands (a key, a number, any other expression), which compile to
// closures of their own: each result is the plain operation's, to the bit.
func TestEvaluateOperands(t *testing.T) {
	y := -3.0 // eval's, as a variable: a constant expression would be exact
	operands := []struct {
		formula string
		value   float64
	}{{"x", 2}, {"0.3", 0.3}, {"(y * 1.1)", y * 1.1}}
	ops := map[string]func(a, b float64) float64{
		"+": func(a, b float64) float64 { return a + b },
		"-": func(a, b float64) float64 { return a - b },
		"*": func(a, b float64) float64 { return a * b },
		"/": func(a, b float64) float64 { return a / b },
	}
	for op, f := range ops {
		for _, a := range operands {
			for _, b := range operands {
				formula := a.formula + " " + op + " " + b.formula
				if got, ok := eval(t, formula); !ok || got != f(a.value, b.value) {
					t.Errorf("%s = %v (ok=%v), want %v", formula, got, ok, f(a.value, b.value))
				}
			}
		}
	}
	// Squares and cubes are products.
	for _, a := range operands {
		x := a.value
		for k, want := range map[int]float64{2: x * x, 3: x * x * x} {
			formula := fmt.Sprintf("%s ^ %d", a.formula, k)
			if got, ok := eval(t, formula); !ok || got != want {
				t.Errorf("%s = %v (ok=%v), want %v", formula, got, ok, want)
			}
		}
	}
}

// Outputs whose value is not a finite number have none.
func TestEvaluateNotFinite(t *testing.T) {
	for _, formula := range []string{"1 / 0", "-x / 0", "0 / 0", "x % 0", "sqrt(y)", "ln(0)", "ln(y)", "asin(x)", "pow(10, 400)", "exp(1000)"} {
		if got, ok := eval(t, formula); ok {
			t.Errorf("%s = %v, want no value", formula, got)
		}
	}
	p, err := Compile(Spec{Inputs: []string{"x"}, Outputs: []Output{{"a", "1 / x"}, {"b", "a * 2"}}})
	if err != nil {
		t.Fatal(err)
	}
	e := p.NewEvaluator()
	for _, x := range []float64{0, 2, 0} {
		e.Reset()
		e.SetInput(0, x)
		e.Run()
	}
	// Twice 1/0; b then lacks a, which is a missing value, not a non-finite one.
	if got := e.NonFinite(); got != 2 {
		t.Errorf("NonFinite() = %d, want 2", got)
	}
}

// piezometer is the blueprint of the README's worked example.
var piezometer = Spec{
	Inputs:    []string{"freq", "temp"},
	Constants: []string{"G", "R0"},
	Outputs: []Output{
		{"pressure", "G * (R0 - digits)"}, // declared before what it uses
		{"digits", "freq^2 / 1000"},
		{"corrected", "pressure + 0.05 * (temp - 20)"},
		{"constant", "G * 1000"},
	},
}

func TestEvaluateMissingValues(t *testing.T) {
	p, err := Compile(piezometer)
	if err != nil {
		t.Fatal(err)
	}
	e := p.NewEvaluator()
	type value struct {
		v  float64
		ok bool
	}
	run := func(set func()) []value {
		e.Reset()
		set()
		e.Run()
		out := make([]value, p.Outputs())
		for k := range out {
			out[k].v, out[k].ok = e.Output(k)
		}
		return out
	}

	all := run(func() {
		e.SetInput(0, 2800)
		e.SetInput(1, 25)
		e.SetConstant(0, 0.1)
		e.SetConstant(1, 9000)
	})
	// By hand: digits = 2800² / 1000 = 7840; pressure = 0.1 × (9000 − 7840)
	// = 116; corrected = 116 + 0.05 × 5 = 116.25; constant = 100.
	for k, want := range []float64{116, 7840, 116.25, 100} {
		if !all[k].ok || math.Abs(all[k].v-want) > 1e-9 {
			t.Errorf("with every value: output %s = %v, want %v", piezometer.Outputs[k].Key, all[k], want)
		}
	}

	noTemp := run(func() {
		e.SetInput(0, 2800)
		e.SetConstant(0, 0.1)
		e.SetConstant(1, 9000)
	})
	if !noTemp[0].ok || !noTemp[1].ok || noTemp[2].ok || !noTemp[3].ok {
		t.Errorf("without temp: %v; want corrected alone to have no value", noTemp)
	}

	noFreq := run(func() {
		e.SetInput(1, 25)
		e.SetConstant(0, 0.1)
		e.SetConstant(1, 9000)
	})
	if noFreq[0].ok || noFreq[1].ok || noFreq[2].ok || !noFreq[3].ok {
		t.Errorf("without freq: %v; want digits and what uses it to have no value", noFreq)
	}

	noR0 := run(func() {
		e.SetInput(0, 2800)
		e.SetInput(1, 25)
		e.SetConstant(0, 0.1)
	})
	if noR0[0].ok || !noR0[1].ok || noR0[2].ok {
		t.Errorf("without R0: %v; want pressure and corrected to have no value", noR0)
	}
	if stale := run(func() {}); stale[0].ok || stale[1].ok || stale[2].ok || stale[3].ok {
		t.Errorf("after Reset with no values: %v; want nothing left from before", stale)
	}
}

func TestCompileErrors(t *testing.T) {
	spec := func(outputs ...Output) Spec {
		return Spec{Inputs: []string{"x"}, Constants: []string{"k"}, Outputs: outputs}
	}
	for _, tt := range []struct {
		name string
		spec Spec
		want []string // parts of the error
	}{
		{"Syntax", spec(Output{"a", "x +"}), []string{`output "a"`, "column 3"}},
		{"Parens", spec(Output{"a", "(x + 1"}), []string{`output "a"`}},
		{"UnknownName", spec(Output{"a", "x + z"}), []string{`output "a"`, "unknown name z", "column 5"}},
		{"UnknownFunction", spec(Output{"a", "Math.foo(x)"}), []string{`output "a"`, "Math.foo"}},
		{"BuiltinsAreGone", spec(Output{"a", "len(x)"}), []string{"len"}},
		{"WrongArity", spec(Output{"a", "atan2(x)"}), []string{`output "a"`}},
		{"Boolean", spec(Output{"a", "x > 1"}), []string{`output "a"`, "must be a number", "true/false"}},
		{"String", spec(Output{"a", `"volts"`}), []string{"must be a number", "string"}},
		{"MixedConditional", spec(Output{"a", `x > 1 ? "a" : 1`}), []string{"must be a number"}},
		{"Array", spec(Output{"a", "[x][0]"}), []string{`output "a"`, "not allowed"}},
		{"In", spec(Output{"a", "x in [1, 2] ? 1 : 0"}), []string{"not allowed"}},
		{"Let", spec(Output{"a", "let y = x; y"}), []string{"not allowed"}},
		{"NotANumberCondition", spec(Output{"a", "x ? 1 : 2"}), []string{`output "a"`}},
		{"Empty", spec(Output{"a", ""}), []string{`output "a"`, "empty"}},
		{"TooLong", spec(Output{"a", strings.Repeat("x+", 500) + "x"}), []string{`output "a"`, "1001 characters", "1000"}},
		{"SelfCycle", spec(Output{"a", "a + 1"}), []string{"a → a", "cycle"}},
		{"Cycle", spec(Output{"a", "b + 1"}, Output{"b", "c * 2"}, Output{"c", "a - x"}, Output{"d", "x"}), []string{"a → b → c → a", "cycle"}},
		{"BadKey", Spec{Inputs: []string{"2x"}}, []string{`"2x"`, "identifier"}},
		{"KeyWithSpace", Spec{Constants: []string{"gauge factor"}}, []string{"identifier"}},
		{"ReservedKey", Spec{Inputs: []string{"sqrt"}}, []string{`"sqrt"`, "reserved"}},
		{"MathKey", Spec{Inputs: []string{"Math"}}, []string{"reserved"}},
		{"DuplicateKey", Spec{Inputs: []string{"x"}, Outputs: []Output{{"x", "1"}}}, []string{`"x"`, "twice"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.spec)
			if err == nil {
				t.Fatalf("Compile succeeded, want an error")
			}
			if apperr.CodeOf(err) != apperr.Invalid {
				t.Errorf("code %s, want invalid", apperr.CodeOf(err))
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestManySlots(t *testing.T) {
	// More than 64 keys: the presence set spans several words.
	spec := Spec{}
	for i := range 100 {
		spec.Inputs = append(spec.Inputs, "in"+string(rune('a'+i%26))+strings.Repeat("x", i/26))
	}
	spec.Outputs = []Output{{"sum", spec.Inputs[0] + " + " + spec.Inputs[99]}}
	p, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	e := p.NewEvaluator()
	e.Reset()
	e.SetInput(0, 1)
	e.Run()
	if _, ok := e.Output(0); ok {
		t.Error("sum has a value without its second input")
	}
	e.SetInput(99, 2)
	e.Run()
	if v, ok := e.Output(0); !ok || v != 3 {
		t.Errorf("sum = %v, %v; want 3", v, ok)
	}
}

func TestFactorAt(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2024, 6, d, 0, 0, 0, 0, time.UTC) }
	value, def := 0.12, 0.1
	dated := []Dated{{day(20), 0.13}, {day(10), 0.125}} // out of order on purpose
	for _, tt := range []struct {
		name   string
		f      Factor
		at     time.Time
		want   float64
		wantOK bool
	}{
		{"BeforeAnyDate", NewFactor(dated, &value, &def), day(1), 0.12, true},
		{"OnADate", NewFactor(dated, &value, &def), day(10), 0.125, true},
		{"BetweenDates", NewFactor(dated, &value, &def), day(15), 0.125, true},
		{"AfterTheLast", NewFactor(dated, &value, &def), day(25), 0.13, true},
		{"AMicrosecondBefore", NewFactor(dated, &value, &def), day(20).Add(-time.Microsecond), 0.125, true},
		{"DefaultWithoutValue", NewFactor(dated, nil, &def), day(1), 0.1, true},
		{"NothingBeforeTheDate", NewFactor(dated, nil, nil), day(1), 0, false},
		{"OnlyDates", NewFactor(dated, nil, nil), day(11), 0.125, true},
		{"Nothing", NewFactor(nil, nil, nil), day(11), 0, false},
	} {
		got, ok := tt.f.At(tt.at)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: At = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestFunctionsListed(t *testing.T) {
	want := []string{"abs", "sqrt", "pow", "exp", "ln", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "min", "max", "round", "floor", "ceil", "clamp"}
	got := strings.Join(Functions(), " ")
	for _, name := range want {
		if !strings.Contains(" "+got+" ", " "+name+" ") {
			t.Errorf("Functions() = %s, lacks %s", got, name)
		}
	}
}

// FuzzCompileEvaluate compiles anything as a formula: it must not panic,
// must fail with an Invalid error or compile, and a compiled formula must
// evaluate without panicking.
func FuzzCompileEvaluate(f *testing.F) {
	for _, tt := range evaluateTests {
		f.Add(tt.formula, 2.0, -3.0)
	}
	for _, s := range []string{"x +", "a + 1", "[x]", `"s"`, "x ? 1 : 2", "Math.foo", "len(x)", "x in [1]", "let a = 1; a", "((((x))))", "1/0"} {
		f.Add(s, 1.0, 0.0)
	}
	f.Fuzz(func(t *testing.T, formula string, x, y float64) {
		p, err := Compile(Spec{Inputs: []string{"x", "y"}, Constants: []string{"k"}, Outputs: []Output{{"a", formula}, {"b", "a * 2"}}})
		if err != nil {
			if apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("Compile(%q): %v, not Invalid", formula, err)
			}
			return
		}
		e := p.NewEvaluator()
		e.Reset()
		e.SetInput(0, x)
		e.SetInput(1, y)
		e.SetConstant(0, 3)
		e.Run()
		if v, ok := e.Output(0); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("%q = %v: an output never holds a non-finite value", formula, v)
		}
	})
}

package formulas

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// function is one function of the formula language. Exactly one of f1, f2,
// f3 and fn is set, by its number of arguments.
type function struct {
	f1               func(float64) float64
	f2               func(float64, float64) float64
	f3               func(float64, float64, float64) float64
	fn               func(...float64) float64       // one or more arguments
	pair             func(float64, float64) float64 // fn of two arguments, without a slice
	minArgs, maxArgs int                            // maxArgs -1: any number
}

func unary(f func(float64) float64) function { return function{f1: f, minArgs: 1, maxArgs: 1} }
func binary(f func(float64, float64) float64) function {
	return function{f2: f, minArgs: 2, maxArgs: 2}
}

// functions are those of JavaScript's Math that make sense for sensor
// formulas, with JavaScript's meaning (round breaks ties upwards), plus ln,
// clamp and mod (the % operator).
var functions = map[string]function{
	"abs":   unary(math.Abs),
	"sqrt":  unary(math.Sqrt),
	"cbrt":  unary(math.Cbrt),
	"exp":   unary(math.Exp),
	"expm1": unary(math.Expm1),
	"ln":    unary(math.Log),
	"log10": unary(math.Log10),
	"log2":  unary(math.Log2),
	"log1p": unary(math.Log1p),
	"sin":   unary(math.Sin),
	"cos":   unary(math.Cos),
	"tan":   unary(math.Tan),
	"asin":  unary(math.Asin),
	"acos":  unary(math.Acos),
	"atan":  unary(math.Atan),
	"sinh":  unary(math.Sinh),
	"cosh":  unary(math.Cosh),
	"tanh":  unary(math.Tanh),
	"asinh": unary(math.Asinh),
	"acosh": unary(math.Acosh),
	"atanh": unary(math.Atanh),
	"floor": unary(math.Floor),
	"ceil":  unary(math.Ceil),
	"trunc": unary(math.Trunc),
	"round": unary(roundJS),
	"sign":  unary(signJS),
	"atan2": binary(math.Atan2),
	"pow":   binary(math.Pow),
	"mod":   binary(math.Mod),
	"hypot": binary(math.Hypot),
	"min":   {fn: minOf, pair: math.Min, minArgs: 1, maxArgs: -1},
	"max":   {fn: maxOf, pair: math.Max, minArgs: 1, maxArgs: -1},
	"clamp": {f3: clamp, minArgs: 3, maxArgs: 3},
}

// Functions lists the functions of the formula language, sorted.
func Functions() []string {
	names := slices.Sorted(maps.Keys(functions))
	return slices.DeleteFunc(names, func(n string) bool { return n == "mod" }) // spelled %
}

// roundJS rounds as JavaScript's Math.round: to the nearest integer, ties
// towards +∞ (Math.round(-2.5) is -2), where math.Round goes away from 0.
func roundJS(x float64) float64 {
	r := math.Floor(x)
	if x-r >= 0.5 {
		r++
	}
	return r
}

func signJS(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // ±0 and NaN stay as they are
}

func minOf(xs ...float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = math.Min(m, x)
	}
	return m
}

func maxOf(xs ...float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = math.Max(m, x)
	}
	return m
}

// clamp limits x to [lo, hi].
func clamp(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }

func (f function) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("%d or more arguments", f.minArgs)
	case f.minArgs == 1:
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", f.minArgs)
}

// compile binds the function to its compiled arguments.
func (f function) compile(args []numFn) numFn {
	switch {
	case f.f1 != nil:
		g, a := f.f1, args[0]
		return func(s []float64) float64 { return g(a(s)) }
	case f.f2 != nil:
		g, a, b := f.f2, args[0], args[1]
		return func(s []float64) float64 { return g(a(s), b(s)) }
	case f.f3 != nil:
		g, a, b, c := f.f3, args[0], args[1], args[2]
		return func(s []float64) float64 { return g(a(s), b(s), c(s)) }
	}
	if len(args) == 2 && f.pair != nil {
		g, a, b := f.pair, args[0], args[1]
		return func(s []float64) float64 { return g(a(s), b(s)) }
	}
	g := f.fn
	return func(s []float64) float64 {
		xs := make([]float64, len(args))
		for i, a := range args {
			xs[i] = a(s)
		}
		return g(xs...)
	}
}

// types declares the function's signatures to expr's type checker, which
// passes integer literals where floats are expected, except to the function
// behind an operator: % is mod, so mod declares the mixed forms too.
func (f function) types() []any {
	switch {
	case f.f1 != nil:
		return []any{new(func(float64) float64)}
	case f.f2 != nil:
		return []any{new(func(float64, float64) float64), new(func(float64, int) float64),
			new(func(int, float64) float64), new(func(int, int) float64)}
	case f.f3 != nil:
		return []any{new(func(float64, float64, float64) float64)}
	}
	return []any{new(func(...float64) float64)}
}

// call is the function as expr's VM calls it; only the benchmark that
// compares with expr runs it.
func (f function) call(params ...any) (any, error) {
	xs := make([]float64, len(params))
	for i, p := range params {
		switch v := p.(type) {
		case float64:
			xs[i] = v
		case int:
			xs[i] = float64(v)
		default:
			return nil, fmt.Errorf("argument %d is %T, not a number", i+1, p)
		}
	}
	switch {
	case f.f1 != nil:
		return f.f1(xs[0]), nil
	case f.f2 != nil:
		return f.f2(xs[0], xs[1]), nil
	case f.f3 != nil:
		return f.f3(xs[0], xs[1], xs[2]), nil
	}
	return f.fn(xs...), nil
}

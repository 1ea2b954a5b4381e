package formulas

import (
	"fmt"
	"math"
	"reflect"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/conf"
)

// A formula compiles to a tree of closures over the slots of a reading.
// expr's own VM keeps values as interfaces, so it allocates for every
// float64 it computes; these closures do not (BenchmarkEvaluate compares
// the two).
type (
	numFn  func(s []float64) float64
	boolFn func(s []float64) bool
)

type compiler struct {
	slots map[string]int
	needs bitset
}

func (c *compiler) compileFormula(cfg func() *conf.Config, formula string) (numFn, error) {
	switch {
	case len(formula) > MaxFormulaLen:
		return nil, fmt.Errorf("the formula is %d characters long; the limit is %d", len(formula), MaxFormulaLen)
	case formula == "":
		return nil, fmt.Errorf("the formula is empty")
	}
	tree, err := checker.ParseCheck(formula, cfg())
	if err != nil {
		return nil, position(err)
	}
	switch kind := tree.Node.Type().Kind(); kind {
	case reflect.Float64, reflect.Int:
	default:
		return nil, fmt.Errorf("the result must be a number, not %s", describe(tree.Node.Type()))
	}
	return c.num(tree.Node)
}

func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "a true/false value"
	case reflect.String:
		return "a string"
	case reflect.Interface:
		return "a value of no single type"
	}
	return t.String()
}

// unsupported is the error for syntax expr accepts and formulas do not.
func unsupported(n ast.Node) error {
	return fmt.Errorf("%q is not allowed in a formula at column %d; use numbers, keys, operators and the listed functions",
		n.String(), n.Location().From+1)
}

func (c *compiler) num(n ast.Node) (numFn, error) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		v := float64(n.Value)
		return func([]float64) float64 { return v }, nil
	case *ast.FloatNode:
		v := n.Value
		return func([]float64) float64 { return v }, nil
	case *ast.IdentifierNode:
		i, ok := c.slots[n.Value]
		if !ok {
			return nil, fmt.Errorf("unknown name %s", n.Value)
		}
		c.needs.set(i)
		return func(s []float64) float64 { return s[i] }, nil
	case *ast.UnaryNode:
		x, err := c.num(n.Node)
		if err != nil {
			return nil, err
		}
		switch n.Operator {
		case "-":
			return func(s []float64) float64 { return -x(s) }, nil
		case "+":
			return x, nil
		}
	case *ast.BinaryNode:
		return c.arithmetic(n)
	case *ast.ConditionalNode:
		cond, err := c.boolean(n.Cond)
		if err != nil {
			return nil, err
		}
		a, err := c.num(n.Exp1)
		if err != nil {
			return nil, err
		}
		b, err := c.num(n.Exp2)
		if err != nil {
			return nil, err
		}
		return func(s []float64) float64 {
			if cond(s) {
				return a(s)
			}
			return b(s)
		}, nil
	case *ast.CallNode:
		return c.call(n)
	}
	return nil, unsupported(n)
}

func (c *compiler) arithmetic(n *ast.BinaryNode) (numFn, error) {
	a, err := c.num(n.Left)
	if err != nil {
		return nil, err
	}
	// x^2 and x^3 are the common powers in sensor formulas; a product is
	// exact where math.Pow is a call.
	if n.Operator == "^" || n.Operator == "**" {
		if k, ok := constant(n.Right); ok && (k == 2 || k == 3) {
			if k == 2 {
				return func(s []float64) float64 { x := a(s); return x * x }, nil
			}
			return func(s []float64) float64 { x := a(s); return x * x * x }, nil
		}
	}
	b, err := c.num(n.Right)
	if err != nil {
		return nil, err
	}
	switch n.Operator {
	case "+":
		return func(s []float64) float64 { return a(s) + b(s) }, nil
	case "-":
		return func(s []float64) float64 { return a(s) - b(s) }, nil
	case "*":
		return func(s []float64) float64 { return a(s) * b(s) }, nil
	case "/":
		return func(s []float64) float64 { return a(s) / b(s) }, nil
	case "%":
		return func(s []float64) float64 { return math.Mod(a(s), b(s)) }, nil
	case "^", "**":
		return func(s []float64) float64 { return math.Pow(a(s), b(s)) }, nil
	}
	return nil, unsupported(n)
}

// constant returns the value of a number literal.
func constant(n ast.Node) (float64, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return float64(n.Value), true
	case *ast.FloatNode:
		return n.Value, true
	}
	return 0, false
}

func (c *compiler) boolean(n ast.Node) (boolFn, error) {
	switch n := n.(type) {
	case *ast.BoolNode:
		v := n.Value
		return func([]float64) bool { return v }, nil
	case *ast.UnaryNode:
		if n.Operator == "!" || n.Operator == "not" {
			x, err := c.boolean(n.Node)
			if err != nil {
				return nil, err
			}
			return func(s []float64) bool { return !x(s) }, nil
		}
	case *ast.BinaryNode:
		switch n.Operator {
		case "&&", "and", "||", "or":
			a, err := c.boolean(n.Left)
			if err != nil {
				return nil, err
			}
			b, err := c.boolean(n.Right)
			if err != nil {
				return nil, err
			}
			if n.Operator == "&&" || n.Operator == "and" {
				return func(s []float64) bool { return a(s) && b(s) }, nil
			}
			return func(s []float64) bool { return a(s) || b(s) }, nil
		case "<", "<=", ">", ">=", "==", "!=":
			return c.comparison(n)
		}
	}
	return nil, unsupported(n)
}

func (c *compiler) comparison(n *ast.BinaryNode) (boolFn, error) {
	a, err := c.num(n.Left)
	if err != nil {
		return nil, err
	}
	b, err := c.num(n.Right)
	if err != nil {
		return nil, err
	}
	switch n.Operator {
	case "<":
		return func(s []float64) bool { return a(s) < b(s) }, nil
	case "<=":
		return func(s []float64) bool { return a(s) <= b(s) }, nil
	case ">":
		return func(s []float64) bool { return a(s) > b(s) }, nil
	case ">=":
		return func(s []float64) bool { return a(s) >= b(s) }, nil
	case "==":
		return func(s []float64) bool { return a(s) == b(s) }, nil
	}
	return func(s []float64) bool { return a(s) != b(s) }, nil
}

func (c *compiler) call(n *ast.CallNode) (numFn, error) {
	id, ok := n.Callee.(*ast.IdentifierNode)
	if !ok {
		return nil, unsupported(n)
	}
	f, ok := functions[id.Value]
	if !ok {
		return nil, fmt.Errorf("unknown function %s", id.Value)
	}
	args := make([]numFn, len(n.Arguments))
	for i, arg := range n.Arguments {
		var err error
		if args[i], err = c.num(arg); err != nil {
			return nil, err
		}
	}
	if len(args) < f.minArgs || (f.maxArgs >= 0 && len(args) > f.maxArgs) {
		return nil, fmt.Errorf("%s takes %s", id.Value, f.arity())
	}
	return f.compile(args), nil
}

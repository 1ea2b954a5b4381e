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
		if la, lb := c.leaf(n.Exp1), c.leaf(n.Exp2); la.kind == numberLeaf && lb.kind == numberLeaf {
			// An alarm's or a state's formula: c ? 1 : 0.
			x, y := la.value, lb.value
			return func(s []float64) float64 {
				if cond(s) {
					return x
				}
				return y
			}, nil
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
	la := c.leaf(n.Left)
	// x^2 and x^3 are the common powers in sensor formulas; a product is
	// exact where math.Pow is a call.
	if n.Operator == "^" || n.Operator == "**" {
		if k, ok := constant(n.Right); ok && (k == 2 || k == 3) {
			switch i := la.slot; {
			case la.kind == slotLeaf && k == 2:
				return func(s []float64) float64 { x := s[i]; return x * x }, nil
			case la.kind == slotLeaf:
				return func(s []float64) float64 { x := s[i]; return x * x * x }, nil
			case k == 2:
				return func(s []float64) float64 { x := a(s); return x * x }, nil
			}
			return func(s []float64) float64 { x := a(s); return x * x * x }, nil
		}
	}
	b, err := c.num(n.Right)
	if err != nil {
		return nil, err
	}
	lb := c.leaf(n.Right)
	switch n.Operator {
	case "+":
		return plus(a, b, la, lb), nil
	case "-":
		return minus(a, b, la, lb), nil
	case "*":
		return times(a, b, la, lb), nil
	case "/":
		return divide(a, b, la, lb), nil
	case "%":
		return func(s []float64) float64 { return math.Mod(a(s), b(s)) }, nil
	case "^", "**":
		return func(s []float64) float64 { return math.Pow(a(s), b(s)) }, nil
	}
	return nil, unsupported(n)
}

// leaf is a node that is a key or a number: an operation on a leaf reads
// its slot or holds its number itself rather than call a closure for it,
// as most operations of sensor formulas have a leaf on one side at least
// (BenchmarkOutputsCompute: a third less time).
type leaf struct {
	kind  leafKind
	slot  int     // a slotLeaf's
	value float64 // a numberLeaf's
}

type leafKind int

const (
	notLeaf leafKind = iota
	slotLeaf
	numberLeaf
)

// leaf returns what n is as a leaf, once c.num has compiled it.
func (c *compiler) leaf(n ast.Node) leaf {
	if id, ok := n.(*ast.IdentifierNode); ok {
		if i, ok := c.slots[id.Value]; ok {
			return leaf{kind: slotLeaf, slot: i}
		}
	}
	if v, ok := constant(n); ok {
		return leaf{kind: numberLeaf, value: v}
	}
	return leaf{}
}

// operands is the shape of a binary operation's operands: each a slot
// (s), a number (n) or any other node (f). Two numbers are f and n.
type operands int

const (
	ff operands = iota
	ss
	sn
	ns
	sf
	fs
	fn
	nf
)

func shape(a, b leaf) operands {
	switch {
	case a.kind == slotLeaf && b.kind == slotLeaf:
		return ss
	case a.kind == slotLeaf && b.kind == numberLeaf:
		return sn
	case a.kind == numberLeaf && b.kind == slotLeaf:
		return ns
	case a.kind == slotLeaf:
		return sf
	case b.kind == slotLeaf:
		return fs
	case b.kind == numberLeaf:
		return fn
	case a.kind == numberLeaf:
		return nf
	}
	return ff
}

// plus, minus, times and divide are a op b, reading a leaf operand
// directly; the results are the same as the plain form's to the bit.
func plus(a, b numFn, la, lb leaf) numFn {
	i, j, x, y := la.slot, lb.slot, la.value, lb.value
	switch shape(la, lb) {
	case ss:
		return func(s []float64) float64 { return s[i] + s[j] }
	case sn:
		return func(s []float64) float64 { return s[i] + y }
	case ns:
		return func(s []float64) float64 { return x + s[j] }
	case sf:
		return func(s []float64) float64 { return s[i] + b(s) }
	case fs:
		return func(s []float64) float64 { return a(s) + s[j] }
	case fn:
		return func(s []float64) float64 { return a(s) + y }
	case nf:
		return func(s []float64) float64 { return x + b(s) }
	}
	return func(s []float64) float64 { return a(s) + b(s) }
}

func minus(a, b numFn, la, lb leaf) numFn {
	i, j, x, y := la.slot, lb.slot, la.value, lb.value
	switch shape(la, lb) {
	case ss:
		return func(s []float64) float64 { return s[i] - s[j] }
	case sn:
		return func(s []float64) float64 { return s[i] - y }
	case ns:
		return func(s []float64) float64 { return x - s[j] }
	case sf:
		return func(s []float64) float64 { return s[i] - b(s) }
	case fs:
		return func(s []float64) float64 { return a(s) - s[j] }
	case fn:
		return func(s []float64) float64 { return a(s) - y }
	case nf:
		return func(s []float64) float64 { return x - b(s) }
	}
	return func(s []float64) float64 { return a(s) - b(s) }
}

func times(a, b numFn, la, lb leaf) numFn {
	i, j, x, y := la.slot, lb.slot, la.value, lb.value
	switch shape(la, lb) {
	case ss:
		return func(s []float64) float64 { return s[i] * s[j] }
	case sn:
		return func(s []float64) float64 { return s[i] * y }
	case ns:
		return func(s []float64) float64 { return x * s[j] }
	case sf:
		return func(s []float64) float64 { return s[i] * b(s) }
	case fs:
		return func(s []float64) float64 { return a(s) * s[j] }
	case fn:
		return func(s []float64) float64 { return a(s) * y }
	case nf:
		return func(s []float64) float64 { return x * b(s) }
	}
	return func(s []float64) float64 { return a(s) * b(s) }
}

func divide(a, b numFn, la, lb leaf) numFn {
	i, j, x, y := la.slot, lb.slot, la.value, lb.value
	switch shape(la, lb) {
	case ss:
		return func(s []float64) float64 { return s[i] / s[j] }
	case sn:
		return func(s []float64) float64 { return s[i] / y }
	case ns:
		return func(s []float64) float64 { return x / s[j] }
	case sf:
		return func(s []float64) float64 { return s[i] / b(s) }
	case fs:
		return func(s []float64) float64 { return a(s) / s[j] }
	case fn:
		return func(s []float64) float64 { return a(s) / y }
	case nf:
		return func(s []float64) float64 { return x / b(s) }
	}
	return func(s []float64) float64 { return a(s) / b(s) }
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
	if lb := c.leaf(n.Right); lb.kind == numberLeaf {
		return compareToNumber(n.Operator, a, lb.value), nil
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

// compareToNumber is a op y, a threshold's usual form.
func compareToNumber(op string, a numFn, y float64) boolFn {
	switch op {
	case "<":
		return func(s []float64) bool { return a(s) < y }
	case "<=":
		return func(s []float64) bool { return a(s) <= y }
	case ">":
		return func(s []float64) bool { return a(s) > y }
	case ">=":
		return func(s []float64) bool { return a(s) >= y }
	case "==":
		return func(s []float64) bool { return a(s) == y }
	}
	return func(s []float64) bool { return a(s) != y }
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
	if f.f1 != nil {
		if l := c.leaf(n.Arguments[0]); l.kind == slotLeaf {
			g, i := f.f1, l.slot
			return func(s []float64) float64 { return g(s[i]) }, nil
		}
	}
	return f.compile(args), nil
}

// Package formulas compiles a sensor's output formulas and evaluates them on
// readings. It owns the formula language: parsing and type checking by
// github.com/expr-lang/expr, then its own validation (names, cycles,
// numeric results), dependency order and a compiled form that evaluates a
// reading without allocating. It knows nothing of HTTP or SQL.
//
// The language: numbers; the instance's input, constant and output keys;
// each input's baseline, by the input's key followed by 0 (BaselineName);
// + - * / % and ^ (power), unary minus, parentheses; comparisons, && || !
// and cond ? a : b; the functions in [Functions], each also reachable as
// Math.<name>, with Math.log the natural log and Math.PI, Math.E. Every value
// is a float64, so 7 / 2 is 3.5.
package formulas

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"

	"github.com/sensorreadings/readings/apperr"
)

// MaxFormulaLen is the longest formula, in bytes.
const MaxFormulaLen = 1000

// Spec is what a sensor's formulas may use: its input and constant keys, and
// its outputs, each a key and a formula that may use the inputs, the
// constants and the other outputs.
type Spec struct {
	Inputs    []string
	Constants []string
	Outputs   []Output
}

// Output is one output's key and formula.
type Output struct {
	Key     string
	Formula string
}

var keyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reserved are names a key cannot have: the functions, Math, and the words
// the expression language keeps for itself.
var reserved = func() map[string]bool {
	r := map[string]bool{"Math": true}
	for _, w := range []string{"true", "false", "nil", "in", "not", "and", "or", "let", "if", "else",
		"matches", "contains", "startsWith", "endsWith", "mod"} {
		r[w] = true
	}
	for name := range functions {
		r[name] = true
	}
	return r
}()

// CheckKey tells whether key can name an input, constant or output.
func CheckKey(key string) error {
	switch {
	case !keyPattern.MatchString(key):
		return fmt.Errorf("key %q is not an identifier (a letter or _, then letters, digits or _)", key)
	case reserved[key]:
		return fmt.Errorf("key %q is reserved by the formula language", key)
	}
	return nil
}

// BaselineName is the name formulas reach input key's baseline by: the
// key followed by 0, as freq0 for freq, unless a key of the Spec already has
// that name or the language reserves it.
func BaselineName(key string) string { return key + "0" }

// Program is a compiled Spec. It is safe for concurrent use; each goroutine
// evaluates with an Evaluator of its own.
type Program struct {
	nInputs, nConstants, nOutputs int    // nConstants counts the baselines
	nDeclared                     int    // the Spec's constants, before the baselines
	words                         int    // of a bitset over all slots
	steps                         []step // the outputs, in dependency order
}

// A slot holds a value during evaluation: inputs first, then constants,
// then one baseline per input, then outputs, in Spec order.
type step struct {
	slot  int
	needs bitset // the slots its formula reads
	eval  numFn
}

// Compile checks every key and formula of spec and orders the outputs so
// that each comes after the outputs it uses. Errors are Invalid and name the
// key or output and what is wrong.
func Compile(spec Spec) (*Program, error) {
	nInputs, nConstants := len(spec.Inputs), len(spec.Constants)+len(spec.Inputs)
	slots := map[string]int{}
	addKeys := func(kind string, keys []string, first int) error {
		for i, key := range keys {
			if err := CheckKey(key); err != nil {
				return invalid(map[string]any{"key": key}, "%s %v", kind, err)
			}
			if _, dup := slots[key]; dup {
				return invalid(map[string]any{"key": key}, "key %q is used twice; keys are unique within a blueprint", key)
			}
			slots[key] = first + i
		}
		return nil
	}
	outputKeys := make([]string, len(spec.Outputs))
	for i, o := range spec.Outputs {
		outputKeys[i] = o.Key
	}
	if err := errors.Join(addKeys("input", spec.Inputs, 0), addKeys("constant", spec.Constants, nInputs),
		addKeys("output", outputKeys, nInputs+nConstants)); err != nil {
		return nil, err
	}
	// Each input's baseline is a constant slot after the declared ones,
	// named only where the name is free: a declared key keeps its meaning.
	for i, key := range spec.Inputs {
		name := BaselineName(key)
		if _, taken := slots[name]; !taken && !reserved[name] {
			slots[name] = nInputs + len(spec.Constants) + i
		}
	}

	p := &Program{
		nInputs:    nInputs,
		nConstants: nConstants,
		nDeclared:  len(spec.Constants),
		nOutputs:   len(spec.Outputs),
		words:      (nInputs + nConstants + len(spec.Outputs) + 63) / 64,
	}
	cfg := checkerConfig(slots)
	steps := make([]step, len(spec.Outputs))
	for i, o := range spec.Outputs {
		c := &compiler{slots: slots, needs: newBitset(p.words)}
		eval, err := c.compileFormula(cfg, o.Formula)
		if err != nil {
			return nil, invalid(map[string]any{"output": o.Key}, "output %q: %v", o.Key, err)
		}
		steps[i] = step{slot: p.nInputs + p.nConstants + i, needs: c.needs, eval: eval}
	}
	order, err := dependencyOrder(spec, steps, p.nInputs+p.nConstants)
	if err != nil {
		return nil, err
	}
	p.steps = order
	return p, nil
}

// dependencyOrder sorts the outputs so that each follows those it uses,
// keeping the declared order where the dependencies allow. A cycle is an
// error that names its outputs.
func dependencyOrder(spec Spec, steps []step, firstOutput int) ([]step, error) {
	done := make([]bool, len(steps))
	order := make([]step, 0, len(steps))
	for len(order) < len(steps) {
		progressed := false
		for i, s := range steps {
			if done[i] || !dependenciesDone(s, done, firstOutput) {
				continue
			}
			done[i] = true
			order = append(order, s)
			progressed = true
		}
		if !progressed {
			return nil, cycleError(spec, steps, done, firstOutput)
		}
	}
	return order, nil
}

func dependenciesDone(s step, done []bool, firstOutput int) bool {
	for j := range done {
		if s.needs.has(firstOutput+j) && !done[j] {
			return false
		}
	}
	return true
}

// cycleError follows unfinished outputs from one to the next until one
// repeats, and names that loop.
func cycleError(spec Spec, steps []step, done []bool, firstOutput int) error {
	start := slices.Index(done, false)
	var path []int
	for i := start; !slices.Contains(path, i); {
		path = append(path, i)
		for j := range steps {
			if !done[j] && steps[i].needs.has(firstOutput+j) {
				i = j
				break
			}
		}
		if len(path) > len(steps) {
			break
		}
		if slices.Contains(path, i) {
			path = append(path[slices.Index(path, i):], i)
			break
		}
	}
	names := make([]string, len(path))
	for k, i := range path {
		names[k] = spec.Outputs[i].Key
	}
	return invalid(map[string]any{"output": names[0], "cycle": names},
		"outputs %s form a cycle; an output cannot depend on itself", strings.Join(names, " → "))
}

// invalid is an Invalid error whose details say which key or output it is
// about, for clients that show it next to the field.
func invalid(details map[string]any, format string, args ...any) *apperr.Error {
	e := apperr.Errorf(apperr.Invalid, format, args...)
	e.Details = details
	return e
}

// checkerConfig declares the typed environment expr checks formulas
// against: every key is a float64, the functions take and return float64,
// and nothing else exists (expr's builtins are removed).
func checkerConfig(slots map[string]int) func() *conf.Config {
	env := make(map[string]any, len(slots))
	for key := range slots {
		env[key] = 0.0
	}
	return func() *conf.Config {
		c := conf.CreateNew()
		expr.Env(env)(c)
		expr.DisableAllBuiltins()(c)
		for name := range c.Disabled {
			delete(c.Builtins, name)
		}
		for name, f := range functions {
			expr.Function(name, f.call, f.types()...)(c)
		}
		// expr's % takes integers only; formulas are about floats.
		expr.Operator("%", "mod")(c)
		expr.Patch(mathNamespace{})(c)
		c.Check()
		return c
	}
}

// mathNamespace rewrites Math.sqrt(x) to sqrt(x), Math.log to ln, and
// Math.PI and Math.E to their values, so that formulas written against
// JavaScript's Math work unchanged.
type mathNamespace struct{}

func (mathNamespace) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	if id, ok := m.Node.(*ast.IdentifierNode); !ok || id.Value != "Math" {
		return
	}
	prop, ok := m.Property.(*ast.StringNode)
	if !ok {
		return
	}
	switch prop.Value {
	case "PI":
		ast.Patch(node, &ast.FloatNode{Value: math.Pi})
	case "E":
		ast.Patch(node, &ast.FloatNode{Value: math.E})
	case "log":
		ast.Patch(node, &ast.IdentifierNode{Value: "ln"})
	default:
		if _, ok := functions[prop.Value]; ok {
			ast.Patch(node, &ast.IdentifierNode{Value: prop.Value})
		} else {
			ast.Patch(node, &ast.IdentifierNode{Value: "Math." + prop.Value})
		}
	}
}

// position explains an expr error in one line, with its column.
func position(err error) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		if fe.Snippet == "" {
			return errors.New(fe.Message)
		}
		return fmt.Errorf("%s at column %d", fe.Message, fe.Column+1)
	}
	return err
}

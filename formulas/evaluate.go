package formulas

import (
	"slices"
	"time"
)

// Evaluator computes a Program's outputs one reading at a time, reusing its
// memory: it allocates once, never per reading or per output. It is not safe
// for concurrent use.
//
// For each reading: Reset, SetInput and SetConstant for the values the
// reading has, Run, then Output for each output.
type Evaluator struct {
	p         *Program
	steps     []step // p's, or those Only left
	slots     []float64
	present   bitset
	nonFinite int
}

// NewEvaluator returns an Evaluator of p.
func (p *Program) NewEvaluator() *Evaluator {
	return &Evaluator{
		p:       p,
		steps:   p.steps,
		slots:   make([]float64, p.nInputs+p.nConstants+p.nOutputs),
		present: newBitset(p.words),
	}
}

// Reset forgets the previous reading's values.
func (e *Evaluator) Reset() { e.present.clear() }

// SetInput gives input i (in Spec order) its value in this reading.
func (e *Evaluator) SetInput(i int, v float64) {
	e.slots[i] = v
	e.present.set(i)
}

// SetConstant gives constant j (in Spec order) its value for this reading.
func (e *Evaluator) SetConstant(j int, v float64) {
	e.slots[e.p.nInputs+j] = v
	e.present.set(e.p.nInputs + j)
}

// Run computes the outputs in dependency order. An output whose formula
// needs an input, constant or output the reading lacks, or whose value is
// NaN or infinite, has no value.
func (e *Evaluator) Run() {
	for i := range e.steps {
		s := &e.steps[i]
		if !e.present.covers(s.needs) {
			continue
		}
		v := s.eval(e.slots)
		if v-v != 0 { // NaN or an infinity: x-x is 0 for any other x
			e.nonFinite++
			continue
		}
		e.slots[s.slot] = v
		e.present.set(s.slot)
	}
}

// Only makes Run compute outputs ks (in Spec order) and those they use,
// and no other, which then has no value. It returns the slots the steps
// left read: the inputs and constants worth setting.
func (e *Evaluator) Only(ks []int) bitset {
	need := newBitset(e.p.words)
	for _, k := range ks {
		need.set(e.p.nInputs + e.p.nConstants + k)
	}
	// The steps are in dependency order: walked backwards, each needed
	// step comes before the steps it uses.
	keep := make([]bool, len(e.p.steps))
	for i := len(e.p.steps) - 1; i >= 0; i-- {
		if s := &e.p.steps[i]; need.has(s.slot) {
			keep[i] = true
			need.or(s.needs)
		}
	}
	e.steps = nil
	for i, s := range e.p.steps {
		if keep[i] {
			e.steps = append(e.steps, s)
		}
	}
	return need
}

// Output returns output k's (in Spec order) value, and whether it has one.
func (e *Evaluator) Output(k int) (float64, bool) {
	slot := e.p.nInputs + e.p.nConstants + k
	return e.slots[slot], e.present.has(slot)
}

// NonFinite counts the outputs left without a value because they came to
// NaN or an infinity (a division by zero, say), over every Run so far.
func (e *Evaluator) NonFinite() int { return e.nonFinite }

// Outputs is the number of outputs.
func (p *Program) Outputs() int { return p.nOutputs }

// bitset is a set of slot indexes; one word covers 64 slots.
type bitset []uint64

func newBitset(words int) bitset { return make(bitset, words) }

func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) clear()         { clear(b) }

func (b bitset) or(c bitset) {
	for i, w := range c {
		b[i] |= w
	}
}

// covers tells whether b holds every element of need.
func (b bitset) covers(need bitset) bool {
	for i, w := range need {
		if w&^b[i] != 0 {
			return false
		}
	}
	return true
}

// Dated is a constant's value from an instant on.
type Dated struct {
	From  time.Time
	Value float64
}

// Factor is a constant's values through time: dated values for periods, an
// undated value, and the blueprint's default.
type Factor struct {
	dated    []Dated // by From, ascending
	fallback float64
	has      bool
}

// NewFactor returns the factor of dated values (in any order), the undated
// value and the default, either of which may be nil.
func NewFactor(dated []Dated, value, def *float64) Factor {
	f := Factor{dated: slices.SortedFunc(slices.Values(dated), func(a, b Dated) int { return a.From.Compare(b.From) })}
	switch {
	case value != nil:
		f.fallback, f.has = *value, true
	case def != nil:
		f.fallback, f.has = *def, true
	}
	return f
}

// At returns the value in force at t: the latest dated value from at or
// before t, else the undated value, else the default. A factor without any
// has no value.
func (f Factor) At(t time.Time) (float64, bool) {
	var w span
	return f.within(t, &w)
}

// within returns the value in force at t, as At does, and narrows w to
// the span around t over which it stays in force: from its dated value's
// start, until the next one's.
func (f *Factor) within(t time.Time, w *span) (float64, bool) {
	if len(f.dated) == 0 {
		return f.fallback, f.has
	}
	// The first dated value that starts after t; the one before it is in force.
	i, _ := slices.BinarySearchFunc(f.dated, t, func(d Dated, t time.Time) int {
		if d.From.After(t) {
			return 1
		}
		return -1
	})
	if i < len(f.dated) {
		w.endAt(f.dated[i].From)
	}
	if i > 0 {
		w.startAt(f.dated[i-1].From)
		return f.dated[i-1].Value, true
	}
	return f.fallback, f.has
}

// span is the instants [from, until), either end open when not set.
type span struct {
	from, until       time.Time
	hasFrom, hasUntil bool
}

// startAt makes the span start at t if it starts earlier.
func (w *span) startAt(t time.Time) {
	if !w.hasFrom || t.After(w.from) {
		w.from, w.hasFrom = t, true
	}
}

// endAt makes the span end at t if it ends later.
func (w *span) endAt(t time.Time) {
	if !w.hasUntil || t.Before(w.until) {
		w.until, w.hasUntil = t, true
	}
}

// holds tells whether t is in the span.
func (w *span) holds(t time.Time) bool {
	return (!w.hasFrom || !t.Before(w.from)) && (!w.hasUntil || t.Before(w.until))
}

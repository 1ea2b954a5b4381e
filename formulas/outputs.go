package formulas

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Instance is what computing one sensor's outputs needs besides its
// formulas: the numeric id of each input and output, and each constant's
// values through time, and each input's baseline through time, all in the
// order of the Spec's keys.
type Instance struct {
	InputIDs  []int64
	OutputIDs []int64
	Constants []Factor
	Baselines []Factor // by input; fewer than the inputs: the rest have none
	Links     []*Link  // by input; nil, or fewer than the inputs: the rest are the reading's own
}

// Cache keeps each sensor's Prepared for the version of its instance it
// was made from, so that a request compiles and prepares at most once per
// change and most do neither. It is safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	prepared map[int64]cachedPrepared // by sensor id
}

type cachedPrepared struct {
	version  int64
	prepared *Prepared
}

// maxCachedPrepared is enough for every sensor of a large deployment; past
// it the cache starts over rather than grow without bound.
const maxCachedPrepared = 100_000

// Prepared returns the Prepared of sensorID's instance at version, made by
// prepare unless the cache has it. A version is never reused for other
// formulas, constants or baselines, which is what makes it a key. Errors
// are prepare's, and are not kept.
func (c *Cache) Prepared(sensorID, version int64, prepare func() (*Prepared, error)) (*Prepared, error) {
	c.mu.Lock()
	cached, ok := c.prepared[sensorID]
	c.mu.Unlock()
	if ok && cached.version == version {
		return cached.prepared, nil
	}
	p, err := prepare()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.prepared == nil || len(c.prepared) >= maxCachedPrepared {
		c.prepared = make(map[int64]cachedPrepared)
	}
	c.prepared[sensorID] = cachedPrepared{version: version, prepared: p}
	c.mu.Unlock()
	return p, nil
}

// Prepared is a Program with what every request computing one version of
// a sensor's outputs shares: its ids, and its constants' and baselines'
// values through time. It is safe for concurrent use; each request
// computes with Outputs of its own.
type Prepared struct {
	program *Program
	inputs  []inputSlot // by id, ascending
	factors []Factor    // the declared constants, then the baselines
	ids     []int64     // of the outputs
	needs   bitset      // the slots the formulas read
}

// Prepare returns the Prepared of p for a sensor's instance, whose Links
// it leaves to Outputs. inst must have an id for each of p's inputs and
// outputs and a factor for each of its constants.
func Prepare(p *Program, inst Instance) *Prepared {
	// The evaluator takes baselines as constants after the declared ones.
	factors := make([]Factor, p.nDeclared, p.nDeclared+len(inst.Baselines))
	copy(factors, inst.Constants)
	factors = append(factors, inst.Baselines...)
	pr := &Prepared{program: p, factors: factors, ids: inst.OutputIDs, needs: newBitset(p.words)}
	for _, s := range p.steps {
		pr.needs.or(s.needs)
	}
	for i, id := range inst.InputIDs {
		pr.inputs = append(pr.inputs, inputSlot{id: id, index: i})
	}
	slices.SortFunc(pr.inputs, func(a, b inputSlot) int { return cmp.Compare(a.id, b.id) })
	return pr
}

// Outputs returns new Outputs of p, whose linked inputs take their values
// from links (by input; nil, or fewer than the inputs: the rest are the
// reading's own).
func (p *Prepared) Outputs(links []*Link) *Outputs {
	o := &Outputs{eval: p.program.NewEvaluator(), inputs: p.inputs, factors: p.factors, used: make([]int, len(p.factors)), links: links, ids: p.ids,
		constants: newBitset(p.program.words), needs: p.needs}
	for k := range o.used {
		o.used[k] = k
	}
	return o
}

// OutputIDs is the id of each output, in Spec order.
func (p *Prepared) OutputIDs() []int64 { return p.ids }

// Outputs computes one sensor's outputs reading after reading, for one
// request: the constants' values in force are looked up again only when a
// reading falls outside the span over which they last held. It is not safe
// for concurrent use.
type Outputs struct {
	eval    *Evaluator
	inputs  []inputSlot // by id, ascending; a Prepared's, shared
	factors []Factor    // a Prepared's, shared
	used    []int       // the factors the formulas computed read
	links   []*Link     // by input
	ids     []int64
	// The used factors' values in force over the span resolved (when
	// hasSpan): kept in the evaluator's constant slots, which a reading's
	// inputs and outputs never write, so that each reading of the span
	// only marks them present. Looking each up again for every reading was
	// a third of Compute's time over a million readings.
	resolved  span
	hasSpan   bool
	constants bitset // the slots of those with a value
	// The input slot of each of the last reading's input ids, or -1 for
	// an id that is not the sensor's, is linked, or is read by no formula
	// computed: a sensor's readings mostly carry the same ids, so that
	// pairing them with the instance's costs a comparison a reading, and
	// only the inputs the formulas read are set (two of row 6b's ten).
	pairedIDs []int64
	paired    []int
	hasPaired bool
	needs     bitset // the slots the formulas computed read
}

type inputSlot struct {
	id    int64
	index int
}

// NewOutputs returns the Outputs of p for a sensor's instance, as
// Prepare(p, inst).Outputs(inst.Links).
func NewOutputs(p *Program, inst Instance) *Outputs { return Prepare(p, inst).Outputs(inst.Links) }

// Compute evaluates the outputs of the reading at t whose input inputIDs[i]
// had values[i], inputIDs ascending; Value then reads them. An input id
// that is not the sensor's is ignored. A linked input takes its link's
// value at t, or is missing, whatever the reading carries for it: the
// link is configuration, the reading's value a leftover of the wiring.
func (o *Outputs) Compute(t time.Time, inputIDs []int64, values []float64) {
	o.eval.Reset()
	if !o.hasPaired || !slices.Equal(inputIDs, o.pairedIDs) {
		o.pair(inputIDs)
	}
	for i, slot := range o.paired {
		if slot >= 0 {
			o.eval.SetInput(slot, values[i])
		}
	}
	for i, l := range o.links {
		if l == nil {
			continue
		}
		if v, ok := l.At(t); ok {
			o.eval.SetInput(i, v)
		}
	}
	if !o.hasSpan || !o.resolved.holds(t) {
		o.resolve(t)
	}
	o.eval.present.or(o.constants)
	o.eval.Run()
}

// pair finds the input slot of each of inputIDs, ascending.
func (o *Outputs) pair(inputIDs []int64) {
	o.pairedIDs, o.paired, o.hasPaired = append(o.pairedIDs[:0], inputIDs...), o.paired[:0], true
	// Both the reading's inputs and the instance's are sorted by id: one
	// pass pairs them.
	j := 0
	for _, id := range inputIDs {
		for j < len(o.inputs) && o.inputs[j].id < id {
			j++
		}
		slot := -1
		if j < len(o.inputs) && o.inputs[j].id == id && !o.linked(o.inputs[j].index) && o.needs.has(o.inputs[j].index) {
			slot = o.inputs[j].index
		}
		o.paired = append(o.paired, slot)
	}
}

// resolve sets the used factors' values in force at t, and the span
// around t over which they all stay so.
func (o *Outputs) resolve(t time.Time) {
	o.resolved, o.hasSpan = span{}, true
	o.constants.clear()
	for _, k := range o.used {
		if v, ok := o.factors[k].within(t, &o.resolved); ok {
			o.eval.SetConstant(k, v)
			o.constants.set(o.eval.p.nInputs + k)
		}
	}
}

// Only makes Compute compute outputs ks (in the order of IDs) and the
// outputs they use, and no other, which then has no value: what an alarm
// rule or a check watches needs no more.
func (o *Outputs) Only(ks []int) {
	need := o.eval.Only(ks)
	o.hasSpan, o.hasPaired, o.needs = false, false, need
	o.used = o.used[:0]
	for k := range o.factors {
		if need.has(o.eval.p.nInputs + k) {
			o.used = append(o.used, k)
		}
	}
}

func (o *Outputs) linked(i int) bool { return i < len(o.links) && o.links[i] != nil }

// Value is output k's value in the reading last computed, and whether it
// has one.
func (o *Outputs) Value(k int) (float64, bool) { return o.eval.Output(k) }

// IDs is the id of each output, in the order Value takes them.
func (o *Outputs) IDs() []int64 { return o.ids }

// NonFinite counts the outputs left without a value because they came to
// NaN or an infinity, over every reading computed so far.
func (o *Outputs) NonFinite() int { return o.eval.NonFinite() }

package server

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
)

// outputAggregates are a sensor's outputs aggregated per bucket, encoded.
type outputAggregates struct {
	ids      []int64
	byBucket map[time.Time][]byte // ,"outputs":{…} of each bucket with readings
	empty    []byte               // that of a bucket without
}

// Start implements sensing.AggregateSink: it names the sensor's values,
// takes, with fill, every bucket and input to list, and with outputs their
// ids, and checks against the budget what fill lists whatever the readings.
func (e *bucketEncoder) Start(sensor store.Sensor, buckets []time.Time, inputIDs, outputIDs []int64) error {
	e.names = sensorNames(sensor, e.byName)
	if e.fill {
		e.starts, e.known = buckets, inputIDs
		// Every bucket lists every input the sensor can have.
		if err := e.spend(len(e.starts) * len(e.known)); err != nil {
			return err
		}
	}
	if e.withOutputs {
		e.outputs = &outputAggregates{ids: outputIDs, byBucket: map[time.Time][]byte{}}
		e.outputs.empty = e.encodeOutputs(func(int) *stats.Stats { return nil })
	}
	return nil
}

// Counts implements sensing.AggregateSink: it takes the buckets to list, and
// checks against the budget that the most the outputs can list fits.
func (e *bucketEncoder) Counts(counts []store.BucketCount) error {
	if !e.fill {
		e.starts = make([]time.Time, len(counts))
	}
	e.countOf = make(map[time.Time]int64, len(counts))
	for i, c := range counts {
		if !e.fill {
			e.starts[i] = c.Bucket
		}
		e.countOf[c.Bucket] = c.Count
	}
	e.b = append(e.b, '[')
	if e.outputs == nil {
		return nil
	}
	return e.spend(len(e.starts) * len(e.outputs.ids)) // without fill, a bucket lists the outputs it has
}

// Outputs implements sensing.AggregateSink.
func (e *bucketEncoder) Outputs(bucket time.Time, all []*stats.Stats) error {
	e.outputs.byBucket[bucket] = e.encodeOutputs(func(k int) *stats.Stats { return all[k] })
	return nil
}

// encodeOutputs encodes the outputs' statistics of a bucket.
func (e *bucketEncoder) encodeOutputs(of func(k int) *stats.Stats) []byte {
	b := []byte(`,"outputs":{`)
	first := true
	for k, id := range e.outputs.ids {
		s := of(k)
		if s == nil && !e.fill {
			continue
		}
		b = appendFns(b, !first, e.names.appendKey, id, e.fns, s)
		first = false
	}
	return append(b, '}')
}

// bucketEncoder writes the response as the inputs' statistics arrive,
// ordered by bucket and input, merging them with the buckets to list. With
// fill, every bucket lists every input and output known, null where it had
// no value; without, a bucket lists what it has.
type bucketEncoder struct {
	b       []byte
	fns     []string
	fill    bool
	starts  []time.Time         // the buckets to list
	countOf map[time.Time]int64 // readings per bucket, where there are any
	known   []int64             // with fill: the inputs every bucket lists
	outputs *outputAggregates   // nil without outputs
	byName  bool                // names values by key
	// withOutputs lists the outputs, even those of a sensor without any.
	withOutputs bool
	names       keyNames

	budget int  // how many more inputs and outputs may be listed
	next   int  // starts[next] is the next bucket to open
	open   bool // whether starts[next-1] is open
	k      int  // with fill: known[k] is the next input to list
	n      int  // inputs listed in the open bucket
}

// spend takes n inputs or outputs listed from the budget, or refuses the
// request.
func (e *bucketEncoder) spend(n int) error {
	e.budget -= n
	if e.budget < 0 {
		return &apperr.Error{
			Code: apperr.Invalid,
			Message: fmt.Sprintf("the response would list more than %d values (buckets × inputs and outputs × fns); "+
				"narrow the range, widen the interval, ask for fewer fns, or leave out fill=null", maxAggregateValues),
			Details: map[string]any{"limit": maxAggregateValues},
		}
	}
	return nil
}

// Input implements sensing.AggregateSink: it lists one input's statistics over
// one bucket.
func (e *bucketEncoder) Input(st *store.InputStats) error {
	// Closes and lists the buckets before st's; a row of a bucket or input
	// not to list (a reading stored since the buckets were counted) is
	// left out.
	for e.next < len(e.starts) && e.starts[e.next].Before(st.Bucket) {
		e.openNext()
	}
	if !e.open || !e.starts[e.next-1].Equal(st.Bucket) {
		if e.next == len(e.starts) || !e.starts[e.next].Equal(st.Bucket) {
			return nil
		}
		e.openNext()
	}
	if e.fill {
		for e.k < len(e.known) && e.known[e.k] < st.InputID {
			e.input(e.known[e.k], nil)
			e.k++
		}
		if e.k == len(e.known) || e.known[e.k] != st.InputID {
			return nil
		}
		e.k++
	} else if err := e.spend(1); err != nil {
		return err
	}
	e.input(st.InputID, &st.Stats)
	return nil
}

// openNext closes the open bucket, if any, and opens the next.
func (e *bucketEncoder) openNext() {
	e.close()
	start := e.starts[e.next]
	e.next++
	if e.next > 1 {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, `{"datetime":"`...)
	e.b = datetime.Append(e.b, start)
	e.b = append(e.b, `","count":`...)
	e.b = strconv.AppendInt(e.b, e.countOf[start], 10)
	e.b = append(e.b, `,"inputs":{`...)
	e.open, e.k, e.n = true, 0, 0
}

func (e *bucketEncoder) input(id int64, s *stats.Stats) {
	e.b = appendFns(e.b, e.n > 0, e.names.appendKey, id, e.fns, s)
	e.n++
}

// close lists the open bucket's inputs left, with fill, and its outputs.
func (e *bucketEncoder) close() {
	if !e.open {
		return
	}
	for ; e.fill && e.k < len(e.known); e.k++ {
		e.input(e.known[e.k], nil)
	}
	e.b = append(e.b, '}')
	if e.outputs != nil {
		outputs, ok := e.outputs.byBucket[e.starts[e.next-1]]
		if !ok {
			outputs = e.outputs.empty
		}
		e.b = append(e.b, outputs...)
	}
	e.b = append(e.b, '}')
	e.open = false
}

// finish lists the buckets left and ends the array.
func (e *bucketEncoder) finish() []byte {
	for e.next < len(e.starts) {
		e.openNext()
	}
	e.close()
	return append(e.b, "]\n"...)
}

// appendFns appends "<id>":{"avg":…,…}, with null for missing values and
// the id named by appendKey.
func appendFns(b []byte, comma bool, appendKey func([]byte, int64) []byte, id int64, fns []string, s *stats.Stats) []byte {
	if comma {
		b = append(b, ',')
	}
	b = appendKey(b, id)
	b = append(b, `:{`...)
	for i, fn := range fns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, fn...)
		b = append(b, `":`...)
		if v, ok := stats.Value(fn, s); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			b = appendNumber(b, v)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}

package server

// The encoders of readings and of what is computed from them, in one
// place: a reading as JSON (a page's element, an NDJSON line, a latest
// value), as a CSV row under a header of its inputs and outputs, as rows
// of one value each (several sensors' readings), and a bucket's
// statistics; numbers and datetimes written the same way everywhere,
// straight into byte slices, since a page encodes a thousand readings and
// encoding/json would build a value of each (BenchmarkEncodePage).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/jsonnum"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
)

// Naming of values.

// keyNames names a sensor's inputs and outputs by their blueprint keys, for
// keys=names; nil names them by id, the default. An id the sensor's
// instance does not know (a sensor without a blueprint, an input removed
// from it) keeps its id.
type keyNames map[int64]keyName

type keyName struct{ key, unit string }

// newKeyNames is the naming keys asks for of sensor's values; each read
// operation has its own generated type of the keys parameter.
func newKeyNames[K ~string](sensor store.Sensor, keys *K) keyNames {
	return sensorNames(sensor, byName(keys))
}

// byName tells whether keys asks for values named by key.
func byName[K ~string](keys *K) bool {
	return keys != nil && string(*keys) == string(gen.KeysNames)
}

// sensorNames is the naming of sensor's values by key, when byName, else
// by id (nil).
func sensorNames(sensor store.Sensor, byName bool) keyNames {
	if !byName || sensor.Instance == nil {
		return nil
	}
	names := keyNames{}
	for _, in := range sensor.Instance.Inputs {
		names[in.ID] = keyName{in.Key, in.Unit}
	}
	for _, out := range sensor.Instance.Outputs {
		names[out.ID] = keyName{out.Key, out.Unit}
	}
	return names
}

// appendKey appends the name of id as a JSON object's key, quoted. Keys
// are identifiers ([A-Za-z_][A-Za-z0-9_]*), so nothing needs escaping.
func (n keyNames) appendKey(b []byte, id int64) []byte {
	b = append(b, '"')
	if name, ok := n[id]; ok {
		b = append(b, name.key...)
	} else {
		b = strconv.AppendInt(b, id, 10)
	}
	return append(b, '"')
}

// appendColumn appends the CSV header cell of id: the id, or the key and
// its unit, as in "pressure (kPa)", quoted when the unit needs it.
func (n keyNames) appendColumn(b []byte, id int64) []byte {
	name, ok := n[id]
	if !ok {
		return strconv.AppendInt(b, id, 10)
	}
	cell := name.key
	if name.unit != "" {
		cell += " (" + name.unit + ")"
	}
	if strings.ContainsAny(cell, `,"`) {
		cell = `"` + strings.ReplaceAll(cell, `"`, `""`) + `"`
	}
	return append(b, cell...)
}

// csvColumns writes readings as CSV rows: datetime, then one column per
// input id, then one per output id; a cell is empty where the reading has
// no value. Every cell is a number or a datetime, so nothing needs quoting;
// only a header cell with a unit may.
type csvColumns struct {
	inputIDs []int64          // ascending
	outputs  *sensing.Outputs // nil without outputs
	names    keyNames
	flags    bool // a last column of flags
}

func (c *csvColumns) appendHeader(b []byte) []byte {
	b = append(b, "datetime"...)
	for _, id := range c.inputIDs {
		b = append(b, ',')
		b = c.names.appendColumn(b, id)
	}
	if c.outputs != nil {
		for _, id := range c.outputs.IDs() {
			b = append(b, ',')
			b = c.names.appendColumn(b, id)
		}
	}
	if c.flags {
		b = append(b, ",flags"...)
	}
	return append(b, '\n')
}

func (c *csvColumns) appendRow(b []byte, r *store.Reading, marks []sensing.Mark) []byte {
	b = datetime.Append(b, r.Time)
	i := 0 // r.InputIDs is ascending, like the columns
	for _, id := range c.inputIDs {
		b = append(b, ',')
		for i < len(r.InputIDs) && r.InputIDs[i] < id {
			i++
		}
		if i < len(r.InputIDs) && r.InputIDs[i] == id {
			b = jsonnum.Append(b, r.Values[i])
		}
	}
	if c.outputs != nil {
		c.outputs.Compute(r)
		for k := range c.outputs.IDs() {
			b = append(b, ',')
			if v, ok := c.outputs.Value(k); ok {
				b = jsonnum.Append(b, v)
			}
		}
	}
	if c.flags {
		b = append(b, ',')
		for i, m := range marks {
			if i > 0 {
				b = append(b, ';')
			}
			b = c.names.appendMarkKey(b, m.InputID)
			b = append(b, ':')
			b = append(b, m.Flag...)
		}
	}
	return append(b, '\n')
}

// appendMarkKey appends what a flag is on, unquoted: * for the whole
// reading, else the input's name.
func (n keyNames) appendMarkKey(b []byte, id int64) []byte {
	if id == 0 {
		return append(b, '*')
	}
	if name, ok := n[id]; ok {
		return append(b, name.key...)
	}
	return strconv.AppendInt(b, id, 10)
}

// appendMarks appends ,"flags":{…} when there are marks.
func appendMarks(b []byte, marks []sensing.Mark, names keyNames) []byte {
	if len(marks) == 0 {
		return b
	}
	b = append(b, `,"flags":{`...)
	for i, m := range marks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = names.appendMarkKey(b, m.InputID)
		b = append(b, `":"`...)
		b = append(b, m.Flag...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// A reading as JSON, and a page of readings.

// readingsPage is a page of readings encoded as JSON while the rows arrive,
// or, asked for CSV, kept until the page is whole, since the header row
// names every input the page has.
type readingsPage struct {
	buf      *bytes.Buffer
	sensorID int64
	outputs  *sensing.Outputs // nil unless outputs=true
	names    keyNames
	enc      readingEncoder
	byName   bool             // names values by key
	csv      []store.Reading  // nil for JSON
	csvMarks [][]sensing.Mark // of each reading of csv
	wantsCSV bool
	allFlags bool           // a CSV's column of flags
	marks    []sensing.Mark // of the reading being added
	count    int
	last     time.Time // of the last reading added
	link     string
	conn     *wholeConn // the page goes out on in one system call, if any
}

var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func newReadingsPage(sensorID int64, byName, wantsCSV bool) *readingsPage {
	buf := pageBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	if !wantsCSV {
		buf.WriteByte('[')
	}
	return &readingsPage{buf: buf, sensorID: sensorID, byName: byName, wantsCSV: wantsCSV}
}

// Sensor implements sensing.ReadingSink: the page names the sensor's
// values as keys asks, and lists its outputs when they are asked for.
func (p *readingsPage) Sensor(sensor store.Sensor, outputs *sensing.Outputs) error {
	p.names, p.outputs = sensorNames(sensor, p.byName), outputs
	p.enc.reset(p.sensorID, p.names)
	return nil
}

// Marks implements sensing.FlagSink.
func (p *readingsPage) Marks(marks []sensing.Mark) { p.marks = marks }

// Reading implements sensing.ReadingSink.
func (p *readingsPage) Reading(r *store.Reading, outputs *sensing.Outputs) error {
	if outputs != nil {
		p.outputs = outputs
	}
	p.add(r)
	p.last = r.Time
	return nil
}

// add appends one reading.
func (p *readingsPage) add(r *store.Reading) {
	if p.wantsCSV {
		p.csv = append(p.csv, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
		p.csvMarks = append(p.csvMarks, slices.Clone(p.marks))
		p.count++
		return
	}
	if p.count > 0 {
		p.buf.WriteByte(',')
	}
	p.buf.Write(p.enc.append(p.buf.AvailableBuffer(), r, p.outputs, p.marks))
	p.count++
}

func (p *readingsPage) finish(link string) *readingsPage {
	p.link = link
	if !p.wantsCSV {
		p.buf.WriteString("]\n")
		return p
	}
	columns := csvColumns{inputIDs: slices.Compact(slices.Sorted(store.InputIDsOf(p.csv))), outputs: p.outputs, names: p.names, flags: p.allFlags}
	p.buf.Write(columns.appendHeader(p.buf.AvailableBuffer()))
	for i := range p.csv {
		p.buf.Write(columns.appendRow(p.buf.AvailableBuffer(), &p.csv[i], p.csvMarks[i]))
	}
	return p
}

func (p *readingsPage) release() {
	if p.buf.Cap() <= 4<<20 {
		pageBuffers.Put(p.buf)
	}
	p.buf, p.conn = nil, nil
}

func (p *readingsPage) VisitListReadingsResponse(w http.ResponseWriter) error {
	defer p.release()
	if p.wantsCSV {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	if p.link != "" {
		w.Header().Set("Link", p.link)
	}
	// The page is whole: with its length, the client has the answer once
	// the last byte arrives, rather than once the handler's middleware has
	// returned and the chunked body's end is written after it (the access
	// log among them).
	w.Header().Set("Content-Length", strconv.Itoa(p.buf.Len()))
	w.WriteHeader(http.StatusOK)
	return writeWhole(p.conn, w, p.buf.Bytes())
}

// readingEncoder appends a sensor's readings as JSON, keeping what a
// reading repeats of the one before: its id's prefix, its inputs' keys
// when it has the same inputs, its outputs' keys, and its day. A page
// writes a thousand readings of one sensor, and formatting the ids was
// as much as a tenth of it. Its zero value is to be reset before use.
type readingEncoder struct {
	names  keyNames
	prefix []byte // {"id":"<sensor id>-
	// idHigh is prefix and the digits of idHighOf, the instant's
	// microseconds above the last eight, the same for a hundred seconds:
	// a reading's id is then a copy and one word of digits.
	idHigh   []byte
	idHighOf int64 // 0 when idHigh is not made
	inputs   keyList
	outputs  keyList
	dates    datetime.Appender
}

// keyList is the keys of a list of ids as JSON objects' keys, each
// quoted and followed by its colon, in one slice.
type keyList struct {
	ids  []int64
	ok   bool // b and ends are the keys of ids
	b    []byte
	ends []int
}

// of returns the keys of ids, named by names, those of the last call
// when ids are the same.
func (k *keyList) of(names keyNames, ids []int64) *keyList {
	if k.ok && slices.Equal(k.ids, ids) {
		return k
	}
	k.ids, k.b, k.ends = append(k.ids[:0], ids...), k.b[:0], k.ends[:0]
	for _, id := range ids {
		k.b = append(names.appendKey(k.b, id), ':')
		k.ends = append(k.ends, len(k.b))
	}
	k.ok = true
	return k
}

// key is the key of the list's i-th id.
func (k *keyList) key(i int) []byte {
	start := 0
	if i > 0 {
		start = k.ends[i-1]
	}
	return k.b[start:k.ends[i]]
}

// reset prepares e for the readings of sensorID, named by names.
func (e *readingEncoder) reset(sensorID int64, names keyNames) {
	e.prefix = strconv.AppendInt(append(e.prefix[:0], `{"id":"`...), sensorID, 10)
	e.prefix = append(e.prefix, '-')
	e.idHighOf = 0
	// Keys by id are the same for every sensor: the lists made for the
	// last sensor serve this one when its ids are the same (keyList.of),
	// which for a project's latest values spared making the same keys
	// again for each of its sensors.
	if names != nil || e.names != nil {
		e.inputs.ok, e.outputs.ok = false, false
	}
	e.names = names
}

// append appends r as JSON, with its outputs unless outputs is nil, its
// values named as reset said:
// {"id":"12-1714564800000000","datetime":"…","inputs":{"101":2803.5},"outputs":{…}}
func (e *readingEncoder) append(b []byte, r *store.Reading, outputs *sensing.Outputs, marks []sensing.Mark) []byte {
	b = e.appendID(b, r.Time.UnixMicro())
	b = append(b, `","datetime":"`...)
	b = e.dates.Append(b, r.Time)
	b = append(b, `","inputs":{`...)
	keys := e.inputs.of(e.names, r.InputIDs)
	for i, v := range r.Values {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, keys.key(i)...)
		b = jsonnum.Append(b, v)
	}
	b = append(b, '}')
	if outputs != nil {
		b = e.appendOutputs(b, outputs, r)
	}
	b = appendMarks(b, marks, e.names)
	return append(b, '}')
}

// appendID appends {"id":"<sensor id>-<us>, us the reading's instant in
// microseconds.
func (e *readingEncoder) appendID(b []byte, us int64) []byte {
	if us < 1e8 {
		// Before 1970-01-01T00:01:40Z: no high digits to keep.
		return jsonnum.AppendInt(append(b, e.prefix...), us)
	}
	if high := us / 1e8; high != e.idHighOf {
		e.idHigh = jsonnum.AppendInt(append(e.idHigh[:0], e.prefix...), high)
		e.idHighOf = high
	}
	return jsonnum.AppendEight(append(b, e.idHigh...), uint32(us%1e8))
}

// appendOutputs computes r's outputs and appends ,"outputs":{…}.
func (e *readingEncoder) appendOutputs(b []byte, outputs *sensing.Outputs, r *store.Reading) []byte {
	outputs.Compute(r)
	keys := e.outputs.of(e.names, outputs.IDs())
	b = append(b, `,"outputs":{`...)
	first := true
	for k := range outputs.IDs() {
		v, ok := outputs.Value(k)
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, keys.key(k)...)
		b = jsonnum.Append(b, v)
	}
	return append(b, '}')
}

// appendJSONString appends s as encoding/json writes it. A string of
// printable ASCII that needs no escape, as names mostly are, is copied
// between quotes; any other goes through json.Marshal, whose escapes
// (HTML's characters, U+2028, invalid UTF-8) stay its own.
func appendJSONString(b []byte, s string) ([]byte, error) {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			return append(b, q...), err
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// Rows of one value each.

// projectRows encodes a project's readings as rows of one value each
// (sensing.ReadingSink), the values that key names alone when it is set.
type projectRows struct {
	b      []byte
	key    *string
	byName bool
	n      int // rows written

	sensorID int64
	name     []byte // the sensor's name, as JSON
	names    keyNames
}

func (p *projectRows) Sensor(sensor store.Sensor, _ *sensing.Outputs) error {
	name, err := json.Marshal(sensor.Name)
	if err != nil {
		return fmt.Errorf("encode sensor name: %w", err)
	}
	p.sensorID, p.name, p.names = sensor.ID, name, sensorNames(sensor, p.byName)
	return nil
}

func (p *projectRows) Reading(r *store.Reading, outputs *sensing.Outputs) error {
	for i, id := range r.InputIDs {
		p.row(r, id, r.Values[i])
	}
	if outputs != nil {
		outputs.Compute(r)
		for k, id := range outputs.IDs() {
			if v, ok := outputs.Value(k); ok {
				p.row(r, id, v)
			}
		}
	}
	return nil
}

func (p *projectRows) row(r *store.Reading, id int64, v float64) {
	key := p.names.appendKey(nil, id)
	if p.key != nil && string(key[1:len(key)-1]) != *p.key {
		return
	}
	if p.n > 0 {
		p.b = append(p.b, ',')
	}
	p.n++
	p.b = append(p.b, `{"sensor_id":`...)
	p.b = strconv.AppendInt(p.b, p.sensorID, 10)
	p.b = append(p.b, `,"sensor":`...)
	p.b = append(p.b, p.name...)
	p.b = append(p.b, `,"datetime":"`...)
	p.b = datetime.Append(p.b, r.Time)
	p.b = append(p.b, `","key":`...)
	p.b = append(p.b, key...)
	p.b = append(p.b, `,"value":`...)
	p.b = jsonnum.Append(p.b, v)
	p.b = append(p.b, '}')
}

// Buckets.

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
			b = jsonnum.Append(b, v)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}')
}

// jsonBody is a 200 JSON response encoded by hand, for the operations whose
// datetimes must have exactly three fractional digits, which encoding/json
// does not write.
type jsonBody []byte

func (j jsonBody) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := bytes.NewReader(j).WriteTo(w)
	return err
}

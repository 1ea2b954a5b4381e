package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/store"
)

// batchScanner is Decode's fast path: a scanner over the bytes
// of a batch as clients write it, each reading an object of datetime and
// inputs, every name and datetime a plain ASCII string, every value a JSON
// number. It takes what the token decoder (decodeTokens) takes, to
// the same readings, and nothing else: anything it does not take, a bad
// body or a good one in an unusual spelling (an escape in a string, say),
// it hands back as errNotPlain for the token decoder to decode or explain
// from the start. FuzzDecodeReadingBatchScanner holds the two to each
// other.
//
// It keeps the whole body, since the token decoder may have to read it
// again: the body limit bounds it, as it bounds the readings it becomes.
// It reads the body in chunks as it goes, so that a batch over max
// readings is refused at reading max+1.
type batchScanner struct {
	r              io.Reader
	buf            []byte // the body so far
	rerr           error  // the reader's error once it has one; io.EOF at the body's end
	max, maxInputs int
	chunk          int // how much of the body it reads at a time: scanChunk, less in tests
	*columns           // the readings so far
	hour           hourCache
	asBefore       inputsTemplate
}

// columns hold the readings of a batch: the scanner's as it scans, then
// the batch's (Readings), until Readings.Release gives them back for the
// next batch, so that a batch allocates no memory of its own once the
// pool holds enough. A reading with the input ids of the one before
// shares them, as most do: the ids are held once, and compared at once
// downstream (store.SameIDs).
type columns struct {
	readings []store.Reading // each reading's datetime, until finish adds its inputs
	ends     []int           // where each reading's values end in values
	idStarts []int           // where each reading's ids start in ids
	ids      []int64
	values   []float64
	pending  int // idStarts of the reading being scanned
}

// size is the memory the columns hold.
func (c *columns) size() int {
	return 72*cap(c.readings) + 8*(cap(c.ends)+cap(c.idStarts)+cap(c.ids)+cap(c.values))
}

// finish gives each reading its inputs, once the columns have stopped
// moving as they grew.
func (c *columns) finish() []store.Reading {
	start := 0
	for i, end := range c.ends {
		from, to := c.idStarts[i], c.idStarts[i]+end-start
		c.readings[i].InputIDs, c.readings[i].Values = c.ids[from:to:to], c.values[start:end:end]
		start = end
	}
	return c.readings
}

// release returns the columns to the pool, unless they hold more than
// maxPooledScanner; the readings go, so that the pool keeps no memory
// they point to.
func (c *columns) release() {
	if c.size() > maxPooledScanner {
		return
	}
	clear(c.readings)
	*c = columns{readings: c.readings[:0], ends: c.ends[:0], idStarts: c.idStarts[:0], ids: c.ids[:0], values: c.values[:0]}
	columnsPool.Put(c)
}

// columnsPool keeps columns between batches.
var columnsPool = sync.Pool{New: func() any { return new(columns) }}

var (
	// errNotPlain: the body is not a batch the scanner takes.
	errNotPlain = errors.New("not a plain batch")
	// errShort: the scanner needs more of the body to go on.
	errShort = errors.New("short")
)

// scanChunk is how much of the body the scanner reads at a time: large
// enough that the reading a chunk cuts in two, scanned again when the
// next chunk is in, costs nothing much; small enough that a batch over the
// limit is refused soon after it is.
const scanChunk = 32 << 10

// scanners keeps scanners, with their buffers, between batches.
var scanners = sync.Pool{New: func() any { return new(batchScanner) }}

// maxPooledScanner is the most memory a scanner keeps for the next batch:
// a larger batch is rare, and its buffers go.
const maxPooledScanner = 8 << 20

// release returns the scanner to the pool, with the columns it still
// holds, unless it holds more than maxPooledScanner.
func (s *batchScanner) release() {
	if s.columns != nil {
		s.columns.release()
	}
	if cap(s.buf) > maxPooledScanner {
		return
	}
	*s = batchScanner{buf: s.buf[:0], asBefore: s.asBefore.emptied()}
	scanners.Put(s)
}

// take takes the columns of the readings scan returned from the scanner,
// for the batch to keep until it releases them.
func (s *batchScanner) take() *columns {
	c := s.columns
	s.columns = nil
	return c
}

// replay is the body again, for the token decoder: what the scanner has
// read of it, then the rest of it, or the reader's error once more.
func (s *batchScanner) replay() io.Reader {
	rest := s.r
	if s.rerr != nil {
		rest = errReader{s.rerr}
	}
	return io.MultiReader(bytes.NewReader(s.buf), rest)
}

// errReader is a reader's error, once more.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// decode decodes the batch r holds: by scanning it, or, for a body the
// scanner does not take, token by token. The readings it scanned are in
// its columns.
func (s *batchScanner) decode(r io.Reader, max, maxInputs int) ([]store.Reading, error) {
	readings, err := s.scan(r, max, maxInputs)
	if err != errNotPlain {
		return readings, err
	}
	return decodeTokens(s.replay(), max, maxInputs)
}

// scan decodes the batch r holds; it returns errNotPlain for a body it
// does not take, and errTooManyReadings for a batch over max readings.
func (s *batchScanner) scan(r io.Reader, max, maxInputs int) ([]store.Reading, error) {
	s.r, s.max, s.maxInputs = r, max, maxInputs
	if s.chunk == 0 {
		s.chunk = scanChunk
	}
	if s.columns == nil {
		s.columns = columnsPool.Get().(*columns)
	}
	s.asBefore = s.asBefore.emptied()
	state, pos := scanOpen, 0
	for state != scanDone {
		next, end, err := s.step(state, pos)
		switch {
		case err == errShort:
			if !s.fill() {
				return nil, errNotPlain // cut short or unreadable: the token decoder says which
			}
		case err != nil:
			return nil, err
		default:
			state, pos = next, end
		}
	}
	return s.finish(), nil
}

// The scanner's states, each a point in the body it may scan again from
// once more of the body is in.
const (
	scanOpen    = iota // at the body's start
	scanReading        // at a reading's '{'
	scanClose          // past the batch's ']'
	scanDone           // at the body's end
)

// step scans from pos in state to the next state: the opening '[', one
// reading and what follows it, or the body's end.
func (s *batchScanner) step(state, pos int) (next, end int, err error) {
	b := s.buf
	switch state {
	case scanOpen:
		p := skipSpace(b, pos)
		if p == len(b) {
			return 0, 0, errShort
		}
		if b[p] != '[' {
			return 0, 0, errNotPlain
		}
		p = skipSpace(b, p+1)
		if p == len(b) {
			return 0, 0, errShort
		}
		if b[p] != '{' {
			return 0, 0, errNotPlain
		}
		return scanReading, p, nil
	case scanReading:
		if len(s.readings) == s.max {
			return 0, 0, errTooManyReadings(s.max)
		}
		ids, values := len(s.ids), len(s.values)
		t, p, err := s.reading(b, pos)
		if err == nil {
			next, p, err = scanSeparator(b, p)
		}
		if err != nil {
			s.ids, s.values = s.ids[:ids], s.values[:values]
			return 0, 0, err
		}
		s.readings = append(s.readings, store.Reading{Time: t})
		s.ends = append(s.ends, len(s.values))
		s.idStarts = append(s.idStarts, s.pending)
		return next, p, nil
	default: // scanClose
		p := skipSpace(b, pos)
		switch {
		case p < len(b):
			return 0, 0, errNotPlain
		case s.rerr == nil:
			return 0, 0, errShort
		case s.rerr != io.EOF:
			return 0, 0, errNotPlain
		}
		return scanDone, p, nil
	}
}

// scanSeparator scans what follows a reading: a comma and the next reading's
// '{', or the batch's ']'.
func scanSeparator(b []byte, p int) (next, end int, err error) {
	p = skipSpace(b, p)
	if p == len(b) {
		return 0, 0, errShort
	}
	switch b[p] {
	case ']':
		return scanClose, p + 1, nil
	case ',':
		p = skipSpace(b, p+1)
		if p == len(b) {
			return 0, 0, errShort
		}
		if b[p] == '{' {
			return scanReading, p, nil
		}
	}
	return 0, 0, errNotPlain
}

// reading scans the reading whose '{' is at p, appending its inputs to
// the columns; it returns its datetime and where it ends.
func (s *batchScanner) reading(b []byte, p int) (time.Time, int, error) {
	if t, end, err, ok := s.plainReading(b, p); ok {
		return t, end, err
	}
	var (
		t                    time.Time
		seenTime, seenInputs bool
		err                  error
	)
	p++
	for {
		p = skipSpace(b, p)
		// "datetime" and "inputs" with the colon after them
		switch {
		case len(b)-p < len(`"datetime"`):
			return t, 0, errShort
		case string(b[p:p+len(`"datetime"`)]) == `"datetime"` && !seenTime:
			seenTime = true
			if p, err = scanColon(b, p+len(`"datetime"`)); err != nil {
				return t, 0, err
			}
			if t, p, err = s.hour.scanDatetime(b, p); err != nil {
				return t, 0, err
			}
		case string(b[p:p+len(`"inputs"`)]) == `"inputs"` && !seenInputs:
			seenInputs = true
			if p, err = scanColon(b, p+len(`"inputs"`)); err != nil {
				return t, 0, err
			}
			if p, err = s.inputs(b, p); err != nil {
				return t, 0, err
			}
		default:
			return t, 0, errNotPlain
		}
		p = skipSpace(b, p)
		if p == len(b) {
			return t, 0, errShort
		}
		switch c := b[p]; {
		case c == '}' && seenTime && seenInputs:
			return t, p + 1, nil
		case c != ',':
			return t, 0, errNotPlain
		}
		p++
	}
}

// plainReading is reading for a reading spelled as clients mostly spell
// it, {"datetime":…,"inputs":{…}} without a space: it reads the names by
// one comparison each. It reports false, having changed nothing, for a
// reading spelled otherwise, for reading to scan.
func (s *batchScanner) plainReading(b []byte, p int) (time.Time, int, error, bool) {
	const before, between = `{"datetime":`, `,"inputs":`
	if len(b)-p <= len(before) || string(b[p:p+len(before)]) != before {
		return time.Time{}, 0, nil, false
	}
	// Up to here reading would have scanned the same, to the same error.
	t, p, err := s.hour.scanDatetime(b, p+len(before))
	if err != nil {
		return t, 0, err, true
	}
	if len(b)-p < len(between)+1 || string(b[p:p+len(between)]) != between {
		return time.Time{}, 0, nil, false
	}
	ids, values, pending := len(s.ids), len(s.values), s.pending
	if p, err = s.inputs(b, p+len(between)); err != nil {
		return t, 0, err, true
	}
	if p == len(b) || b[p] != '}' {
		s.ids, s.values, s.pending = s.ids[:ids], s.values[:values], pending
		return time.Time{}, 0, nil, false
	}
	return t, p + 1, nil, true
}

// scanColon scans the colon after a name and the space around it.
func scanColon(b []byte, p int) (int, error) {
	p = skipSpace(b, p)
	if p == len(b) {
		return 0, errShort
	}
	if b[p] != ':' {
		return 0, errNotPlain
	}
	p = skipSpace(b, p+1)
	if p == len(b) {
		return 0, errShort
	}
	return p, nil
}

// maxDatetimeLen is the longest datetime parseDatetime takes:
// 2006-01-02T15:04:05.000000+07:00.
const maxDatetimeLen = len("2006-01-02T15:04:05.000000+07:00")

// scanDatetime scans the datetime string at p. One with an escape fails
// datetime.Parse, and goes to the token decoder.
func (h *hourCache) scanDatetime(b []byte, p int) (time.Time, int, error) {
	if b[p] != '"' {
		return time.Time{}, 0, errNotPlain
	}
	window := b[p+1 : min(len(b), p+2+maxDatetimeLen)]
	n := bytes.IndexByte(window, '"')
	if n < 0 {
		if p+2+maxDatetimeLen > len(b) {
			return time.Time{}, 0, errShort
		}
		return time.Time{}, 0, errNotPlain
	}
	if t, ok := h.parse(window[:n]); ok {
		return t, p + n + 2, nil
	}
	t, err := datetime.Parse(window[:n])
	if err != nil {
		return time.Time{}, 0, errNotPlain
	}
	h.keep(window[:n], t)
	return t, p + n + 2, nil
}

// hourCache parses the datetimes of a batch's hour, and zone, faster than
// datetime.Parse: from the instant of the hour's start, which Parse
// found, with the minutes and seconds added. Most readings of a batch are
// in the hour of the one before.
type hourCache struct {
	prefix [len("2006-01-02T15")]byte // the hour, when start is set
	zone   [len("+07:00")]byte
	zoneN  int
	start  time.Time // the hour's start; zero: nothing kept
}

// keep keeps the hour of s, a datetime Parse took as t.
func (h *hourCache) keep(s []byte, t time.Time) {
	h.start = time.Time{}
	since, zone, ok := sinceHour(s)
	if !ok || len(zone) > len(h.zone) {
		return
	}
	copy(h.prefix[:], s[:13])
	h.zoneN = copy(h.zone[:], zone)
	h.start = t.Add(-since)
}

// parse is datetime.Parse for a datetime s in the hour kept, with the
// same instant; it reports false for any other, or any it may refuse.
func (h *hourCache) parse(s []byte) (time.Time, bool) {
	if h.start.IsZero() || len(s) < len("2006-01-02T15") || string(s[:13]) != string(h.prefix[:]) {
		return time.Time{}, false
	}
	since, zone, ok := sinceHour(s)
	if !ok || string(zone) != string(h.zone[:h.zoneN]) {
		return time.Time{}, false
	}
	t := h.start.Add(since)
	if t.Before(datetime.Min) || t.After(datetime.Max) {
		return time.Time{}, false
	}
	return t, true
}

// sinceHour is the minutes, seconds and fraction of the datetime s, how
// long after the start of its hour it is, and its zone; it reports false
// where datetime.Parse may refuse them.
func sinceHour(s []byte) (since time.Duration, zone []byte, ok bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[13] != ':' || s[16] != ':' {
		return 0, nil, false
	}
	minute, ok1 := twoDigits(s[14], s[15])
	second, ok2 := twoDigits(s[17], s[18])
	if !ok1 || !ok2 || minute > 59 || second > 59 {
		return 0, nil, false
	}
	rest, nanos := s[19:], 0
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && n <= 6 && rest[n] >= '0' && rest[n] <= '9' {
			nanos = nanos*10 + int(rest[n]-'0')
			n++
		}
		if n == 1 || n == len(rest) || rest[n] >= '0' && rest[n] <= '9' {
			return 0, nil, false
		}
		nanos *= pow10Int[10-n]
		rest = rest[n:]
	}
	return time.Duration(minute)*time.Minute + time.Duration(second)*time.Second + time.Duration(nanos), rest, true
}

var pow10Int = [...]int{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// twoDigits is the value of two ASCII digits.
func twoDigits(a, b byte) (int, bool) {
	return int(a-'0')*10 + int(b-'0'), a >= '0' && a <= '9' && b >= '0' && b <= '9'
}

// inputs scans the inputs object at p, appending its ids and values to the
// columns sorted by id; the ids only if they are not the reading before's.
// It appends to copies of the columns' slices, kept in registers, and
// gives them back to the columns once the object is scanned.
func (s *batchScanner) inputs(b []byte, p int) (int, error) {
	if b[p] != '{' {
		return 0, errNotPlain
	}
	if end, ok := s.inputsAsBefore(b, p); ok {
		return end, nil
	}
	allIDs, allValues := s.ids, s.values
	start := len(allIDs)
	p++
	for {
		p = skipSpace(b, p)
		if p == len(b) {
			return 0, errShort
		}
		if b[p] != '"' {
			return 0, errNotPlain
		}
		q, id := p+1, int64(0)
		for q < len(b) && b[q]-'0' < 10 {
			id = id*10 + int64(b[q]-'0') // checked below, wrapped or not
			q++
		}
		if q == len(b) {
			return 0, errShort
		}
		if b[q] != '"' || len(allIDs)-start == s.maxInputs {
			return 0, errNotPlain
		}
		var err error
		if n := q - p - 1; n == 0 || n > 18 || b[p+1] == '0' {
			if id, err = parseInputID(b[p+1 : q]); err != nil {
				return 0, errNotPlain
			}
		}
		if q+2 < len(b) && b[q+1] == ':' && b[q+2] > ' ' {
			p = q + 2 // the colon, without space around it
		} else if p, err = scanColon(b, q+1); err != nil {
			return 0, err
		}
		v, q, ok := 0.0, 0, false
		if len(b)-p >= decimalRoom { // scanNumber, without a call
			v, q, ok = scanDecimal(b, p)
		}
		if !ok {
			if v, q, err = scanAnyNumber(b, p); err != nil {
				return 0, err
			}
		}
		allIDs = append(allIDs, id)
		allValues = append(allValues, v)
		p = skipSpace(b, q)
		if p == len(b) {
			return 0, errShort
		}
		if b[p] == '}' {
			break
		}
		if b[p] != ',' {
			return 0, errNotPlain
		}
		p++
	}
	ids := allIDs[start:]
	values := allValues[len(allValues)-len(ids):]
	sortInputs(ids, values)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return 0, errNotPlain
		}
	}
	s.ids, s.values, s.pending = allIDs, allValues, start
	if k := len(s.ends); k > 0 {
		prev, n := s.idStarts[k-1], s.ends[k-1]
		if k > 1 {
			n -= s.ends[k-2]
		}
		if slices.Equal(allIDs[prev:prev+n], ids) {
			s.ids, s.pending = allIDs[:start], prev
		}
	}
	return p + 1, nil
}

// inputsTemplate is the inputs of the reading before as a client writes
// them when it writes every reading alike: the ids ascending, each as
// `"id":` with no space, the value after it and `,` or `}` right after
// the value. A reading whose inputs object is spelled so is read by
// comparing each id's bytes with one word, and shares the reading
// before's ids: what inputs would find, without its search for the ids'
// ends, the colon and the spaces, nor its sort, its check for twice the
// same id and its comparison with the ids before.
type inputsTemplate struct {
	start, n int      // the ids it spells, in columns.ids; n == 0: none yet
	ok       bool     // every id fits a word
	misses   int      // readings that were not spelled so, in this batch
	words    []uint64 // input j's bytes: `"id":` for the first, `,"id":` after
	masks    []uint64 // the bytes of each word that the spelling fills
	lens     []int    // and how many
}

// maxTemplateMisses is how many readings of a batch may be spelled
// otherwise before the scanner stops trying the template: each costs the
// reading's values scanned twice.
const maxTemplateMisses = 4

// emptied is t without its ids, keeping its memory.
func (t inputsTemplate) emptied() inputsTemplate {
	return inputsTemplate{words: t.words[:0], masks: t.masks[:0], lens: t.lens[:0]}
}

// spell makes t spell the n ids at start in ids.
func (t *inputsTemplate) spell(ids []int64, start, n int) {
	t.start, t.n, t.ok = start, n, true
	t.words, t.masks, t.lens = t.words[:0], t.masks[:0], t.lens[:0]
	var word [16]byte
	for j, id := range ids[start : start+n] {
		w := word[:0]
		if j > 0 {
			w = append(w, ',')
		}
		w = append(w, '"')
		w = strconv.AppendInt(w, id, 10)
		w = append(w, '"', ':')
		if len(w) > 8 {
			t.ok = false
			return
		}
		t.words = append(t.words, binary.LittleEndian.Uint64(word[:8]))
		t.masks = append(t.masks, math.MaxUint64>>(64-8*len(w)))
		t.lens = append(t.lens, len(w))
		clear(word[:])
	}
}

// inputsAsBefore is inputs for an inputs object spelled as the reading
// before's (inputsTemplate): it appends the values and shares the ids.
// It reports false, having changed nothing, for any other object, and for
// one near the end of what is in, for inputs to scan.
func (s *batchScanner) inputsAsBefore(b []byte, p int) (int, bool) {
	t, k := &s.asBefore, len(s.ends)
	if k == 0 || t.misses == maxTemplateMisses {
		return 0, false
	}
	prev, n := s.idStarts[k-1], s.ends[k-1]
	if k > 1 {
		n -= s.ends[k-2]
	}
	if t.start != prev || t.n != n {
		t.spell(s.ids, prev, n)
	}
	if !t.ok {
		return 0, false
	}
	values := s.values
	p++
	for j, word := range t.words {
		if len(b)-p < 8+decimalRoom {
			return 0, false // inputs says errShort, or scans what it can
		}
		if binary.LittleEndian.Uint64(b[p:])&t.masks[j] != word {
			t.misses++
			return 0, false
		}
		v, end, ok := scanDecimal(b, p+t.lens[j])
		if !ok {
			var err error
			if v, end, err = scanAnyNumber(b, p+t.lens[j]); err != nil {
				return 0, false // inputs gives the error
			}
		}
		values = append(values, v)
		p = end
	}
	if p == len(b) || b[p] != '}' {
		t.misses++
		return 0, false
	}
	s.values, s.pending = values, prev
	return p + 1, true
}

// shortOrNotPlain is errShort at the end of what is in, errNotPlain
// before it.
func shortOrNotPlain(b []byte, p int) error {
	if p == len(b) {
		return errShort
	}
	return errNotPlain
}

// skipSpace skips JSON's whitespace.
func skipSpace(b []byte, p int) int {
	for p < len(b) && (b[p] == ' ' || b[p] == '\n' || b[p] == '\r' || b[p] == '\t') {
		p++
	}
	return p
}

// fill reads the next chunk of the body; it reports false when no more of
// it will come. The buffer grows as io.ReadAll's does, by append's steps,
// so that a body at the limit does not take twice the limit.
func (s *batchScanner) fill() bool {
	if s.rerr != nil {
		return false
	}
	if cap(s.buf)-len(s.buf) < 512 {
		s.buf = append(s.buf, make([]byte, s.chunk)...)[:len(s.buf)]
	}
	end := min(cap(s.buf), len(s.buf)+s.chunk)
	for len(s.buf) < end && s.rerr == nil {
		n, err := s.r.Read(s.buf[len(s.buf):end])
		s.buf = s.buf[:len(s.buf)+n]
		s.rerr = err
	}
	return true
}

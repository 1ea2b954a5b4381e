package batch

import (
	"bytes"
	"errors"
	"io"
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

	// The readings so far, in columns that the scanner keeps from batch
	// to batch; finish copies them out, each to one array of its size.
	times  []time.Time
	ends   []int // where each reading's inputs end in ids and values
	ids    []int64
	values []float64
}

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

// release returns the scanner to the pool, unless it holds more than
// maxPooledScanner.
func (s *batchScanner) release() {
	size := cap(s.buf) + 24*cap(s.times) + 8*(cap(s.ends)+cap(s.ids)+cap(s.values))
	if size > maxPooledScanner {
		return
	}
	*s = batchScanner{buf: s.buf[:0], times: s.times[:0], ends: s.ends[:0], ids: s.ids[:0], values: s.values[:0]}
	scanners.Put(s)
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
// scanner does not take, token by token.
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

// finish copies the readings out of the scanner's columns.
func (s *batchScanner) finish() []store.Reading {
	readings := make([]store.Reading, len(s.times))
	ids := append([]int64(nil), s.ids...)
	values := append([]float64(nil), s.values...)
	start := 0
	for i, end := range s.ends {
		readings[i] = store.Reading{Time: s.times[i], InputIDs: ids[start:end:end], Values: values[start:end:end]}
		start = end
	}
	return readings
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
		if len(s.times) == s.max {
			return 0, 0, errTooManyReadings(s.max)
		}
		start := len(s.ids)
		t, p, err := s.reading(b, pos)
		if err == nil {
			next, p, err = scanSeparator(b, p)
		}
		if err != nil {
			s.ids, s.values = s.ids[:start], s.values[:start]
			return 0, 0, err
		}
		s.times = append(s.times, t)
		s.ends = append(s.ends, len(s.ids))
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
			if t, p, err = scanDatetime(b, p); err != nil {
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
// parseDatetime, and goes to the token decoder.
func scanDatetime(b []byte, p int) (time.Time, int, error) {
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
	t, err := datetime.Parse(window[:n])
	if err != nil {
		return time.Time{}, 0, errNotPlain
	}
	return t, p + n + 2, nil
}

// inputs scans the inputs object at p, appending its ids and values to the
// columns sorted by id.
func (s *batchScanner) inputs(b []byte, p int) (int, error) {
	if b[p] != '{' {
		return 0, errNotPlain
	}
	start := len(s.ids)
	p++
	for {
		p = skipSpace(b, p)
		if p == len(b) {
			return 0, errShort
		}
		if b[p] != '"' {
			return 0, errNotPlain
		}
		q := p + 1
		for q < len(b) && b[q] >= '0' && b[q] <= '9' {
			q++
		}
		if q == len(b) {
			return 0, errShort
		}
		if b[q] != '"' || len(s.ids)-start == s.maxInputs {
			return 0, errNotPlain
		}
		id, err := scanInputID(b[p+1 : q])
		if err != nil {
			return 0, err
		}
		if p, err = scanColon(b, q+1); err != nil {
			return 0, err
		}
		v, q, err := scanNumber(b, p)
		if err != nil {
			return 0, err
		}
		s.ids = append(s.ids, id)
		s.values = append(s.values, v)
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
	ids, values := s.ids[start:], s.values[start:]
	sortInputs(ids, values)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return 0, errNotPlain
		}
	}
	return p + 1, nil
}

// scanInputID is parseInputID for the digits of an input id, without
// its checks for overflow where there can be none.
func scanInputID(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 18 || b[0] == '0' {
		id, err := parseInputID(b)
		if err != nil {
			return 0, errNotPlain
		}
		return id, nil
	}
	var id int64
	for _, c := range b {
		id = id*10 + int64(c-'0')
	}
	return id, nil
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

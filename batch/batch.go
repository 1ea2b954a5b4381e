// Package batch decodes the body of a readings POST, the spec's
// ReadingBatch, straight into the store's columns as it streams in. Its
// Readings is the type oapi-codegen gives that body on the server's side
// (openapi/server-overlay.yaml), so that the batch reaches PostReadings on
// the strict request object, decoded by Decode, while the generated client
// keeps the spec's own types.
package batch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/store"
)

// The limits of a batch that the contract states: those UnmarshalJSON
// applies. The server applies its own (-max-batch, -max-inputs) by calling
// Decode.
const (
	MaxReadings = 10_000
	MaxInputs   = 100
)

// Readings is a batch of readings, each one's inputs ascending by id.
// Decoded by its Decode, List is in memory that Release gives back for
// the next batch.
type Readings struct {
	List []store.Reading
	cols *columns // List's memory, when Release may give it back
}

// UnmarshalJSON decodes a batch with the contract's limits, for a decoder
// other than the server's, which streams the body through Readings.Decode
// with the service's own.
func (b *Readings) UnmarshalJSON(data []byte) error {
	readings, err := Decode(bytes.NewReader(data), MaxReadings, MaxInputs)
	*b = Readings{List: readings}
	return err
}

// Decode is Readings.Decode into memory of the caller's own: the
// readings are the caller's to keep.
func Decode(r io.Reader, max, maxInputs int) ([]store.Reading, error) {
	var b Readings
	if err := b.Decode(r, max, maxInputs); err != nil {
		return nil, err
	}
	defer b.Release()
	if b.cols == nil {
		return b.List, nil
	}
	readings := slices.Clone(b.List)
	ids := slices.Clone(b.cols.ids)
	values := slices.Clone(b.cols.values)
	start := 0
	for i, end := range b.cols.ends {
		from, to := b.cols.idStarts[i], b.cols.idStarts[i]+end-start
		readings[i].InputIDs, readings[i].Values = ids[from:to:to], values[start:end:end]
		start = end
	}
	return readings, nil
}

// Release gives the memory of b.List back for the next batch to decode
// into: b.List must not be used after it. A batch that is not released
// is left to the garbage collector.
func (b *Readings) Release() {
	if b.cols != nil {
		b.cols.release()
	}
	*b = Readings{}
}

// Decode reads the body of a readings POST as the spec's
// ReadingBatch describes it, as it streams in, so that a
// batch over max readings is refused at reading max+1 rather than after the
// whole body is in memory, and a reading over maxInputs inputs at its
// input maxInputs+1. It is stricter than the schema can say: exactly
// the fields datetime and inputs, datetimes to the microsecond with a zone,
// input ids in canonical decimal and each once, finite numbers. Errors name
// the element's index.
//
// It decodes straight into the columns the store writes, each reading's
// inputs sorted by id, without a map per reading: this is the service's
// hottest path (BenchmarkDecodeReadingBatch). A scanner over the bytes
// (batchScanner) takes the batches clients write; any other body, good
// or bad, goes to the token decoder, which explains what is wrong.
func (b *Readings) Decode(r io.Reader, max, maxInputs int) error {
	s := scanners.Get().(*batchScanner)
	defer s.release()
	readings, err := s.scan(r, max, maxInputs)
	switch {
	case err == nil:
		*b = Readings{List: readings, cols: s.take()}
		return nil
	case err == errNotPlain:
		readings, err = decodeTokens(s.replay(), max, maxInputs)
	}
	*b = Readings{List: readings}
	return err
}

// decodeTokens is Decode token by token, for the bodies the scanner does
// not take.
func decodeTokens(r io.Reader, max, maxInputs int) ([]store.Reading, error) {
	// Names are checked here (datetime and inputs once each, input ids once
	// each after sorting), cheaper than jsontext's general bookkeeping.
	dec := jsontext.NewDecoder(r, jsontext.AllowDuplicateNames(true))
	if err := expectDelim(dec, '['); err != nil {
		return nil, batchError(err, "the body must be a JSON array of readings")
	}
	b := batchDecoder{dec: dec, maxInputs: maxInputs}
	for {
		kind := dec.PeekKind()
		if kind == ']' {
			break
		}
		if kind == jsontext.KindInvalid {
			_, err := dec.ReadToken()
			return nil, batchError(err, "the body is cut short")
		}
		index := len(b.readings)
		if index == max {
			return nil, errTooManyReadings(max)
		}
		if err := b.decodeReading(); err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) {
				e = batchError(err, "")
			}
			e.Message = fmt.Sprintf("element %d: %s", index, e.Message)
			e.Details = map[string]any{"index": index}
			return nil, e
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, batchError(err, "")
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, apperr.Errorf(apperr.Invalid, "the body must hold one JSON array and nothing after it")
	}
	if len(b.readings) == 0 {
		return nil, apperr.Errorf(apperr.Invalid, "the batch is empty; send at least one reading")
	}
	return b.finish(), nil
}

// errTooManyReadings refuses a batch over max readings.
func errTooManyReadings(max int) error {
	return apperr.Errorf(apperr.TooLarge, "a batch holds at most %d readings; split it into several POSTs", max)
}

type batchDecoder struct {
	dec       *jsontext.Decoder
	maxInputs int
	readingColumns
}

// readingColumns keeps every reading's inputs in two shared arrays, rather
// than two small slices per reading; a reading holds its span of them until
// finish slices them out, since the arrays move as they grow.
type readingColumns struct {
	readings []store.Reading
	spans    []int // where each reading's inputs start in ids and values
	ids      []int64
	values   []float64
}

func (b *readingColumns) finish() []store.Reading {
	for i := range b.readings {
		start, end := b.spans[i], len(b.ids)
		if i+1 < len(b.spans) {
			end = b.spans[i+1]
		}
		b.readings[i].InputIDs = b.ids[start:end:end]
		b.readings[i].Values = b.values[start:end:end]
	}
	return b.readings
}

func (b *batchDecoder) decodeReading() error {
	dec := b.dec
	if err := expectDelim(dec, '{'); err != nil {
		return batchError(err, "a reading must be a JSON object with datetime and inputs")
	}
	var (
		reading              store.Reading
		seenTime, seenInputs bool
	)
	b.spans = append(b.spans, len(b.ids))
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return batchError(err, "")
		}
		switch string(name) {
		case `"datetime"`:
			if seenTime {
				return apperr.Errorf(apperr.Invalid, "a name appears twice in one object: datetime")
			}
			seenTime = true
			value, err := dec.ReadValue()
			if err != nil {
				return batchError(err, "")
			}
			if value.Kind() != '"' {
				return apperr.Errorf(apperr.Invalid, "datetime must be a string such as \"2024-05-01T12:00:00Z\"")
			}
			if reading.Time, err = datetime.Parse(unquote(value)); err != nil {
				return apperr.Errorf(apperr.Invalid, "%v", err)
			}
		case `"inputs"`:
			if seenInputs {
				return apperr.Errorf(apperr.Invalid, "a name appears twice in one object: inputs")
			}
			seenInputs = true
			if err := b.decodeInputs(); err != nil {
				return err
			}
		default:
			return apperr.Errorf(apperr.Invalid, "field %s is not allowed; a reading has exactly datetime and inputs", name)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return batchError(err, "")
	}
	switch {
	case !seenTime:
		return apperr.Errorf(apperr.Invalid, "datetime is missing")
	case !seenInputs:
		return apperr.Errorf(apperr.Invalid, "inputs is missing")
	}
	b.readings = append(b.readings, reading)
	return nil
}

func (b *batchDecoder) decodeInputs() error {
	dec := b.dec
	if err := expectDelim(dec, '{'); err != nil {
		return batchError(err, "inputs must be an object of input ids to numbers, such as {\"101\": 2.5}")
	}
	start := len(b.ids)
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return batchError(err, "")
		}
		if len(b.ids)-start == b.maxInputs {
			return &apperr.Error{
				Code:    apperr.Invalid,
				Message: fmt.Sprintf("a reading has at most %d inputs", b.maxInputs),
				Details: map[string]any{"limit": b.maxInputs},
			}
		}
		key := unquote(name)
		id, err := parseInputID(key)
		if err != nil {
			return apperr.Errorf(apperr.Invalid, "inputs: %v", err)
		}
		value, err := dec.ReadToken()
		if err != nil {
			return batchError(err, "")
		}
		if value.Kind() != '0' {
			return apperr.Errorf(apperr.Invalid, "inputs: the value of %q must be a number", key)
		}
		f, err := value.Float()
		if err != nil {
			return apperr.Errorf(apperr.Invalid, "inputs: the value of %q, %s, is beyond a 64-bit float", key, value.String())
		}
		b.ids = append(b.ids, id)
		b.values = append(b.values, f)
	}
	if _, err := dec.ReadToken(); err != nil {
		return batchError(err, "")
	}
	ids, values := b.ids[start:], b.values[start:]
	if len(ids) == 0 {
		return apperr.Errorf(apperr.Invalid, "inputs is empty; a reading needs at least one input")
	}
	sortInputs(ids, values)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return apperr.Errorf(apperr.Invalid, "a name appears twice in one object: input %d", ids[i])
		}
	}
	return nil
}

// sortInputs orders a reading's inputs by id, keeping ids and values
// paired: an insertion sort, for the handful a reading has, most often
// already in order.
func sortInputs(ids []int64, values []float64) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
			values[j], values[j-1] = values[j-1], values[j]
		}
	}
}

// unquote returns the text of a JSON string value, in the decoder's buffer
// (valid until its next read) unless it has escapes to undo.
func unquote(v jsontext.Value) []byte {
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1]
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return v // the decoder has checked it; a bad one fails the parsers
	}
	return s
}

// parseInputID parses an input id in canonical decimal: 1 to 2^63-1, no
// sign, no leading zeros, so that one id has one spelling.
func parseInputID[T string | []byte](s T) (int64, error) {
	var id int64
	ok := len(s) > 0 && len(s) <= 19 && s[0] != '0'
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= '0' && c <= '9'
		d := int64(c - '0')
		ok = ok && id <= (math.MaxInt64-d)/10
		id = id*10 + d
	}
	if !ok {
		return 0, fmt.Errorf("%q is not an input id; ids are decimal numbers from 1 to 9223372036854775807 without leading zeros", string(s))
	}
	return id, nil
}

// expectDelim reads the next token and checks it opens an object or array.
func expectDelim(dec *jsontext.Decoder, want jsontext.Kind) error {
	if kind := dec.PeekKind(); kind != want {
		if kind == jsontext.KindInvalid {
			_, err := dec.ReadToken()
			return err
		}
		return errWrongKind
	}
	_, err := dec.ReadToken()
	return err
}

var errWrongKind = errors.New("wrong kind")

// batchError explains a decoding error; wrongKind is the message for a
// value of the wrong kind.
func batchError(err error, wrongKind string) *apperr.Error {
	if e, ok := errors.AsType[*apperr.Error](err); ok {
		return e // the body's reader said why: too large, say
	}
	switch {
	case errors.Is(err, errWrongKind) && wrongKind != "":
		return apperr.Errorf(apperr.Invalid, "%s", wrongKind)
	case errors.Is(err, jsontext.ErrDuplicateName):
		return apperr.Errorf(apperr.Invalid, "a name appears twice in one object")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return apperr.Errorf(apperr.Invalid, "the body is empty or cut short")
	}
	if syntax, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		return apperr.Errorf(apperr.Invalid, "the body is not valid JSON at byte %d: %v", syntax.ByteOffset, syntax.Err)
	}
	return apperr.Wrap(apperr.Invalid, err, "the body could not be read")
}

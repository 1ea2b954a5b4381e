package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
)

// decodeReadingBatch reads the body of a readings POST as the spec's
// ReadingBatch describes it, token by token as it streams in, so that a
// batch over max readings is refused at reading max+1 rather than after the
// whole body is in memory. It is stricter than the schema can say: exactly
// the fields datetime and inputs, datetimes to the microsecond with a zone,
// input ids in canonical decimal, finite numbers, no duplicate names.
// Errors name the element's index.
func decodeReadingBatch(r io.Reader, max int) ([]gen.ReadingInput, error) {
	dec := jsontext.NewDecoder(r)
	if err := expectDelim(dec, '['); err != nil {
		return nil, batchError(err, "the body must be a JSON array of readings")
	}
	var batch []gen.ReadingInput
	for {
		kind := dec.PeekKind()
		if kind == ']' {
			break
		}
		if kind == jsontext.KindInvalid {
			_, err := dec.ReadToken()
			return nil, batchError(err, "the body is cut short")
		}
		index := len(batch)
		if index == max {
			return nil, apperr.Errorf(apperr.TooLarge, "a batch holds at most %d readings; split it into several POSTs", max)
		}
		reading, err := decodeReading(dec)
		if err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) {
				e = batchError(err, "")
			}
			e.Message = fmt.Sprintf("element %d: %s", index, e.Message)
			e.Details = map[string]any{"index": index}
			return nil, e
		}
		batch = append(batch, reading)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, batchError(err, "")
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, apperr.Errorf(apperr.Invalid, "the body must hold one JSON array and nothing after it")
	}
	if len(batch) == 0 {
		return nil, apperr.Errorf(apperr.Invalid, "the batch is empty; send at least one reading")
	}
	return batch, nil
}

func decodeReading(dec *jsontext.Decoder) (gen.ReadingInput, error) {
	var reading gen.ReadingInput
	if err := expectDelim(dec, '{'); err != nil {
		return reading, batchError(err, "a reading must be a JSON object with datetime and inputs")
	}
	var seenDatetime bool
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return reading, batchError(err, "")
		}
		switch field := name.String(); field {
		case "datetime":
			value, err := dec.ReadToken()
			if err != nil {
				return reading, batchError(err, "")
			}
			if value.Kind() != '"' {
				return reading, apperr.Errorf(apperr.Invalid, "datetime must be a string such as \"2024-05-01T12:00:00Z\"")
			}
			if reading.Datetime, err = parseDatetime(value.String()); err != nil {
				return reading, apperr.Errorf(apperr.Invalid, "%v", err)
			}
			seenDatetime = true
		case "inputs":
			if reading.Inputs, err = decodeInputs(dec); err != nil {
				return reading, err
			}
		default:
			return reading, apperr.Errorf(apperr.Invalid, "field %q is not allowed; a reading has exactly datetime and inputs", field)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return reading, batchError(err, "")
	}
	switch {
	case !seenDatetime:
		return reading, apperr.Errorf(apperr.Invalid, "datetime is missing")
	case reading.Inputs == nil:
		return reading, apperr.Errorf(apperr.Invalid, "inputs is missing")
	}
	return reading, nil
}

func decodeInputs(dec *jsontext.Decoder) (map[string]float64, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, batchError(err, "inputs must be an object of input ids to numbers, such as {\"101\": 2.5}")
	}
	inputs := make(map[string]float64, 8)
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, batchError(err, "")
		}
		key := name.String()
		if _, err := parseInputID(key); err != nil {
			return nil, apperr.Errorf(apperr.Invalid, "inputs: %v", err)
		}
		value, err := dec.ReadToken()
		if err != nil {
			return nil, batchError(err, "")
		}
		if value.Kind() != '0' {
			return nil, apperr.Errorf(apperr.Invalid, "inputs: the value of %q must be a number", key)
		}
		f, err := value.Float()
		if err != nil {
			return nil, apperr.Errorf(apperr.Invalid, "inputs: the value of %q, %s, is beyond a 64-bit float", key, value.String())
		}
		inputs[key] = f
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, batchError(err, "")
	}
	if len(inputs) == 0 {
		return nil, apperr.Errorf(apperr.Invalid, "inputs is empty; a reading needs at least one input")
	}
	return inputs, nil
}

// parseInputID parses an input id in canonical decimal: 1 to 2^63-1, no
// sign, no leading zeros, so that one id has one spelling.
func parseInputID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 || s[0] == '0' || s[0] == '+' {
		return 0, fmt.Errorf("%q is not an input id; ids are decimal numbers from 1 to 9223372036854775807 without leading zeros", s)
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
	if tooBig, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return bodyTooLarge(tooBig.Limit)
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

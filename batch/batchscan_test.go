package batch

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/store"
)

// plainBatches are batches as clients write them, which the scanner takes
// itself: any whitespace JSON allows, fields in either order, numbers in
// every form JSON has.
var plainBatches = []string{
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1.5,"2":-3}}]`,
	`[{"inputs":{"7":1e-300},"datetime":"2024-05-01T14:00:00.123456+02:00"}]`,
	" \t\r\n[ {\n \"datetime\" : \"2024-05-01T12:00:00Z\" ,\r\n\t\"inputs\" : { \"1\" : 1 , \"2\" :2 } } ,\n{\"datetime\":\"2024-05-01T12:00:01-05:30\",\"inputs\":{\"3\":0}} ] \n",
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"10":0,"9":-0,"8":-0.0,"7":0e5,"6":1E+2,"5":2.5e-3,"4":-12345678901234567890,"3":0.000001234,"2":1.7976931348623157e308,"1":4.9e-324}}]`,
	`[{"datetime":"9999-12-31T23:59:59.999999Z","inputs":{"9223372036854775807":123456789012345678901234567890}},{"datetime":"0001-01-01T00:00:00Z","inputs":{"1":512.2534567890123}}]`,
	`[{"datetime":"2024-02-29T00:00:00.5+14:00","inputs":{"3":3,"1":1,"2":2}}]`,
}

// unusualBatches are bodies the scanner leaves to the token decoder: good
// ones with escapes, and bad ones.
var unusualBatches = []string{
	`[{"datetime":"\u0032024-05-01T12:00:00Z","inputs":{"\u0031":1}}]`,
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1},"dat\u0065time_":1}]`,
	`[{"d\u0061tetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}]`,
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}]` + "\x00",
}

func TestBatchScannerTakesPlainBatches(t *testing.T) {
	for _, body := range append(plainBatches, string(batchtest.Body()), string(batchtest.BenchBody())) {
		got, err := new(batchScanner).scan(strings.NewReader(body), 10000, 100)
		if err != nil {
			t.Errorf("scan(%.80q): %v, want it taken", body, err)
			continue
		}
		want, err := decodeTokens(strings.NewReader(body), 10000, 100)
		if err != nil {
			t.Fatalf("decodeTokens(%.80q): %v", body, err)
		}
		if diff := diffReadings(got, want); diff != "" {
			t.Errorf("scan(%.80q): %s", body, diff)
		}
	}
	for _, body := range unusualBatches {
		if _, err := new(batchScanner).scan(strings.NewReader(body), 10000, 100); err != errNotPlain {
			t.Errorf("scan(%q): %v, want errNotPlain", body, err)
		}
	}
}

// A reading with the input ids of the one before shares them, so that
// they are held once and compared at once (store.SameIDs); one with other
// ids, or the same ids after a reading with others, has its own.
func TestBatchScannerSharesRepeatedIDs(t *testing.T) {
	body := `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1,"2":2}},
		{"datetime":"2024-05-01T12:00:01Z","inputs":{"2":3,"1":4}},
		{"datetime":"2024-05-01T12:00:02Z","inputs":{"1":5}},
		{"datetime":"2024-05-01T12:00:03Z","inputs":{"1":6,"2":7}}]`
	got, err := new(batchScanner).scan(strings.NewReader(body), 10000, 100)
	if err != nil {
		t.Fatal(err)
	}
	want, err := decodeTokens(strings.NewReader(body), 10000, 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffReadings(got, want); diff != "" {
		t.Fatal(diff)
	}
	for _, tt := range []struct {
		i, j   int
		shared bool
	}{{0, 1, true}, {1, 2, false}, {2, 3, false}, {0, 3, false}} {
		if shared := &got[tt.i].InputIDs[0] == &got[tt.j].InputIDs[0]; shared != tt.shared {
			t.Errorf("readings %d and %d share their ids: %v, want %v", tt.i, tt.j, shared, tt.shared)
		}
	}
}

// A reading spelled as the one before, its ids ascending and compact, is
// read by comparing its names' bytes with the one before's
// (inputsAsBefore, plainReading); any other spelling, wherever it starts,
// must still be read, or refused, as the token decoder does, and share
// ids only with a reading of the same ids.
func TestBatchScannerReadsAsBefore(t *testing.T) {
	const base = `"1":512.2534567890123,"2":-0.0000123456789,"10":98765.4321`
	reading := func(second int, inputs string) string {
		return fmt.Sprintf(`{"datetime":"2024-05-01T12:00:%02dZ","inputs":{%s}}`, second, inputs)
	}
	for _, tt := range []struct {
		name, inputs string
		shared       bool // the second reading shares the first's ids
	}{
		{"AsBefore", base, true},
		{"OtherValues", `"1":1,"2":-2.5,"10":1e3`, true},
		{"LongNumbers", `"1":123456789012,"2":0.12345678901234567890,"10":-0`, true},
		{"SpaceAfterColon", `"1": 1,"2":2,"10":3`, true},
		{"SpaceAfterComma", `"1":1, "2":2,"10":3`, true},
		{"SpaceBeforeBrace", `"1":1,"2":2,"10":3 `, true},
		{"OtherOrder", `"2":2,"1":1,"10":3`, true},
		{"FewerInputs", `"1":1,"2":2`, false},
		{"MoreInputs", `"1":1,"2":2,"10":3,"11":4`, false},
		{"OtherID", `"1":1,"3":2,"10":3`, false},
		{"IDWithPrefix", `"1":1,"2":2,"100":3`, false},
		{"LongID", `"1":1,"2":2,"1234567":3`, false},
		{"Escape", `"\u0031":1,"2":2,"10":3`, true},
		{"TwiceAnID", `"1":1,"1":2,"10":3`, false},
		{"BadNumber", `"1":1.,"2":2,"10":3`, false},
		{"NotANumber", `"1":"1","2":2,"10":3`, false},
		{"CutShort", `"1":1,"2":2,"10"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var readings []string
			for i, inputs := range []string{base, tt.inputs, base, tt.inputs, base} {
				readings = append(readings, reading(i, inputs))
			}
			body := "[" + strings.Join(readings, ",") + "]"
			for _, size := range []int{len(body), 64, 7} {
				want, wantErr := decodeTokens(strings.NewReader(body), 100, 100)
				got, err := (&batchScanner{chunk: size}).decode(&pieceReader{body, size}, 100, 100)
				if diff := diffReadings(got, want); diff != "" {
					t.Fatalf("decode in pieces of %d: %s", size, diff)
				}
				if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Fatalf("decode in pieces of %d: %v, want %v", size, err, wantErr)
				}
				if err != nil {
					continue
				}
				if shared := &got[0].InputIDs[0] == &got[1].InputIDs[0]; shared != tt.shared && !strings.Contains(tt.inputs, `\`) {
					t.Errorf("decode in pieces of %d: readings 0 and 1 share their ids: %v, want %v", size, shared, tt.shared)
				}
			}
		})
	}
}

// The scanner's hour cache gives datetime.Parse's instant for every
// datetime Parse takes, and refuses the rest, in whatever order they come:
// in one hour and zone, across hours, zones and the ends of the range.
func TestHourCacheParsesAsParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pick := func(options ...string) string { return options[rng.IntN(len(options))] }
	var h hourCache
	for range 200_000 {
		s := pick("2024-05-01", "0001-01-01", "9999-12-31", "2024-02-29", "2023-02-29") + "T" +
			pick("00", "12", "23", "24") + ":" + pick("00", "07", "59", "60", "6x") + ":" + pick("00", "30", "59", "60", "61") +
			pick("", "", ".5", ".123456", ".1234567", ".", ".000001") + pick("Z", "Z", "+02:00", "-00:30", "+14:00", "", "+24:00", "z")
		want, wantErr := datetime.Parse(s)
		body := []byte(strconv.Quote(s) + ",")
		got, end, err := h.scanDatetime(body, 0)
		switch {
		case wantErr != nil:
			if err != errNotPlain {
				t.Fatalf("scanDatetime(%q) = %v, %v; Parse refuses it: %v", s, got, err, wantErr)
			}
		case err != nil || end != len(body)-1 || got != want:
			t.Fatalf("scanDatetime(%q) = %v, %d, %v; want %v, %d", s, got, end, err, want, len(body)-1)
		}
	}
}

// A batch over the limit is refused by the scanner itself, with the token
// decoder's error.
func TestBatchScannerTooManyReadings(t *testing.T) {
	one := `{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}`
	body := "[" + one + ", " + one + "," + one + "]"
	_, err := new(batchScanner).scan(strings.NewReader(body), 2, 100)
	_, want := decodeTokens(strings.NewReader(body), 2, 100)
	if err == nil || want == nil || err.Error() != want.Error() || apperr.CodeOf(err) != apperr.TooLarge {
		t.Errorf("scan: %v, want %v", err, want)
	}
}

// FuzzDecodeReadingBatchScanner holds the scanner to the token decoder it
// stands in for: Decode must take what decodeTokens
// takes, to the same readings bit for bit, and refuse the rest with the
// token decoder's error, however the body arrives in pieces and whatever
// the limits. The token decoder's messages may quote what its buffer
// holds, which depends on the pieces: a refusal must say what it says when
// it reads the body in the same pieces, with the code and details it has
// when it reads the body at once.
func FuzzDecodeReadingBatchScanner(f *testing.F) {
	for _, s := range readingBodySeeds {
		f.Add(s, uint8(100), uint8(100), uint8(0))
	}
	for i, s := range append(plainBatches, unusualBatches...) {
		f.Add(s, uint8(100), uint8(100), uint8(i))
		f.Add(s, uint8(0), uint8(1), uint8(7))
	}
	one := `{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1,"2":2.5}}`
	f.Add("["+strings.Repeat(one+",", 5)+one+"]", uint8(4), uint8(1), uint8(13))
	f.Add("["+strings.Repeat(one+",", 5)+one+"]", uint8(5), uint8(0), uint8(50))
	f.Fuzz(func(t *testing.T, body string, max, maxInputs, piece uint8) {
		limit, inputs, size := int(max)+1, int(maxInputs)+1, int(piece)%64+1
		want, wantErr := decodeTokens(strings.NewReader(body), limit, inputs)
		s := &batchScanner{chunk: size}
		got, err := s.decode(&pieceReader{body, size}, limit, inputs)
		if diff := diffReadings(got, want); diff != "" {
			t.Fatalf("decode(%q, %d, %d): %s", body, limit, inputs, diff)
		}
		if (err == nil) != (wantErr == nil) || apperr.CodeOf(err) != apperr.CodeOf(wantErr) {
			t.Fatalf("decode(%q, %d, %d) = %v; the token decoder says %v", body, limit, inputs, err, wantErr)
		}
		if err == nil {
			return
		}
		if !sameDetails(err, wantErr) {
			t.Fatalf("decode(%q, %d, %d) = %v, details %v; the token decoder says %v, details %v",
				body, limit, inputs, err, detailsOf(err), wantErr, detailsOf(wantErr))
		}
		read := len(s.buf)
		_, wantErr = decodeTokens(io.MultiReader(strings.NewReader(body[:read]), &pieceReader{body[read:], size}), limit, inputs)
		if !sameError(err, wantErr) {
			t.Fatalf("decode(%q, %d, %d) = %v; the token decoder, reading the same pieces, says %v", body, limit, inputs, err, wantErr)
		}
	})
}

// pieceReader reads s in pieces of at most size bytes, as a body arrives.
type pieceReader struct {
	s    string
	size int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.s) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.size)], r.s)
	r.s = r.s[n:]
	return n, nil
}

func detailsOf(err error) string {
	if e, ok := errors.AsType[*apperr.Error](err); ok {
		return fmt.Sprint(e.Details)
	}
	return ""
}

func sameDetails(err, want error) bool { return detailsOf(err) == detailsOf(want) }

// sameError reports whether two decoding errors say the same to a client.
func sameError(err, want error) bool {
	if err == nil || want == nil {
		return err == want
	}
	return apperr.CodeOf(err) == apperr.CodeOf(want) && err.Error() == want.Error() && sameDetails(err, want)
}

// diffReadings describes the first difference between two batches, in
// time, ids or the bits of a value; "" if there is none.
func diffReadings(got, want []store.Reading) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d readings, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Time != w.Time {
			return fmt.Sprintf("reading %d at %v, want %v", i, g.Time, w.Time)
		}
		if len(g.InputIDs) != len(w.InputIDs) || len(g.Values) != len(w.Values) {
			return fmt.Sprintf("reading %d: inputs %v %v, want %v %v", i, g.InputIDs, g.Values, w.InputIDs, w.Values)
		}
		for j := range g.InputIDs {
			if g.InputIDs[j] != w.InputIDs[j] || math.Float64bits(g.Values[j]) != math.Float64bits(w.Values[j]) {
				return fmt.Sprintf("reading %d: inputs %v %v, want %v %v", i, g.InputIDs, g.Values, w.InputIDs, w.Values)
			}
		}
	}
	return ""
}

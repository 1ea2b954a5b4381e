package batch

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
)

var readingBodySeeds = []string{
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1.5,"2":-3}}]`,
	`[{"inputs":{"7":1e-300},"datetime":"2024-05-01T14:00:00.123456+02:00"}]`,
	`[]`, `{}`, `null`, `[1]`, `[[]]`, `[{}]`, `[{"datetime":"x"}]`,
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":"1"}}]`,
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1,"1":2}}]`,
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"01":1}}]`,
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1e999}}]`,
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}] x`,
	`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}},`,
	`[{"datetime":"\u0032024-05-01T12:00:00Z","inputs":{"\u0031":1}}]`,
	"[{\"datetime\":\"2024-05-01T12:00:00Z\",\"inputs\":{\"1\":1},\"x\xff\":1}]",
	strings.Repeat("[", 10000),
}

// FuzzDecode feeds the readings decoder anything: it must not
// panic, must refuse with a client error (400 or 413), and whatever it
// accepts must be valid JSON that encoding/json reads as the same readings.
func FuzzDecode(f *testing.F) {
	for _, s := range readingBodySeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		batch, err := Decode(strings.NewReader(body), 100, 100)
		if err != nil {
			if code := apperr.CodeOf(err); code != apperr.Invalid && code != apperr.TooLarge {
				t.Fatalf("Decode(%q): %v, code %s; want invalid or too_large", body, err, code)
			}
			return
		}
		var std []struct {
			Inputs map[string]float64 `json:"inputs"`
		}
		if err := json.Unmarshal([]byte(body), &std); err != nil {
			t.Fatalf("Decode(%q) accepted what encoding/json refuses: %v", body, err)
		}
		if len(std) != len(batch) || len(batch) == 0 {
			t.Fatalf("Decode(%q) = %d readings, encoding/json %d", body, len(batch), len(std))
		}
		for i, r := range batch {
			if len(r.InputIDs) == 0 || len(r.InputIDs) != len(std[i].Inputs) || len(r.Values) != len(r.InputIDs) {
				t.Fatalf("element %d: inputs %v %v, encoding/json %v", i, r.InputIDs, r.Values, std[i].Inputs)
			}
			for j, id := range r.InputIDs {
				v := r.Values[j]
				key := strconv.FormatInt(id, 10)
				if math.IsNaN(v) || math.IsInf(v, 0) || std[i].Inputs[key] != v {
					t.Fatalf("element %d input %s = %v, encoding/json %v", i, key, v, std[i].Inputs[key])
				}
				if j > 0 && id <= r.InputIDs[j-1] {
					t.Fatalf("element %d: ids %v are not ascending and unique", i, r.InputIDs)
				}
			}
		}
	})
}

func TestDecodeLimit(t *testing.T) {
	one := `{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}`
	body := "[" + strings.Repeat(one+",", 3) + one + "]"
	if _, err := Decode(strings.NewReader(body), 4, 100); err != nil {
		t.Errorf("4 readings with a limit of 4: %v", err)
	}
	_, err := Decode(strings.NewReader(body), 3, 100)
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.TooLarge || !strings.Contains(e.Message, "at most 3") {
		t.Errorf("4 readings with a limit of 3: %v, want too_large naming the limit", err)
	}
}

// The decoder stops at the first reading past the limit: it never reads a
// body of a million readings to refuse it.
func TestDecodeStopsEarly(t *testing.T) {
	one := `{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}},`
	r := &countingReader{r: strings.NewReader("[" + strings.Repeat(one, 100000))}
	if _, err := Decode(r, 10, 100); apperr.CodeOf(err) != apperr.TooLarge {
		t.Fatalf("err = %v, want too_large", err)
	}
	if r.n > 64<<10 {
		t.Errorf("read %d bytes to refuse a batch at reading 11; want it to stop early", r.n)
	}
}

type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

var inputIDTests = []struct {
	in   string
	want int64
	ok   bool
}{
	{"1", 1, true},
	{"101", 101, true},
	{"9223372036854775807", math.MaxInt64, true},
	{"0", 0, false},
	{"01", 0, false},
	{"-1", 0, false},
	{"+1", 0, false},
	{"1.0", 0, false},
	{"1e3", 0, false},
	{" 1", 0, false},
	{"9223372036854775808", 0, false},
	{"", 0, false},
	{"temp", 0, false},
}

func TestParseInputID(t *testing.T) {
	for _, tt := range inputIDTests {
		got, err := parseInputID(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseInputID(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// A decoder other than the server's (encoding/json here) decodes a batch
// through UnmarshalJSON, with the contract's limits.
func TestUnmarshalJSON(t *testing.T) {
	var b Readings
	body := `[{"datetime":"2024-05-01T14:00:00+02:00","inputs":{"2":2.5,"1":-1}}]`
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	if got, want := len(b.List), 1; got != want {
		t.Fatalf("%d readings, want %d", got, want)
	}
	if r := b.List[0]; !r.Time.Equal(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)) || !slices.Equal(r.InputIDs, []int64{1, 2}) || !slices.Equal(r.Values, []float64{-1, 2.5}) {
		t.Errorf("reading = %+v, want 12:00 UTC, inputs 1 and 2 in order", r)
	}
	one := `{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}},`
	tooMany := "[" + strings.Repeat(one, MaxReadings) + one[:len(one)-1] + "]"
	if err := json.Unmarshal([]byte(tooMany), &b); apperr.CodeOf(err) != apperr.TooLarge {
		t.Errorf("%d readings: %v, want too_large", MaxReadings+1, err)
	}
}

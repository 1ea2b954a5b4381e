package server

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
)

// FuzzAppendJSONString checks the names' encoder against encoding/json,
// byte for byte, whatever the string.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "S001", "bench piezometer", `a "quoted" name`, `back\slash`, "<b>&amp;</b>", "tab\there",
		"line\u2028sep", "Zürich", "\xff\xfe", "\x7f", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJSONString([]byte("x"), s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(got), "x"+string(want); got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

// TestReadingIDs checks the ids readingEncoder writes against strconv's,
// for sensors in turn on one encoder, over instants whose microseconds'
// digits above the last eight stay, change, come back, or are too few to
// keep (before 1970-01-01T00:01:40Z, and before 1970).
func TestReadingIDs(t *testing.T) {
	micros := []int64{
		1714564800000000, 1714564800000001, 1714564899999999, // the same high digits
		1714564900000000, 1714564800012345, // the next; back, a low half with leading zeros
		1e8, 1e8 + 5, 99_999_999, 12345, 1, 0, -1, -1714564800000000, // too few
		123456789012345678, 1714564800000000, // more high digits; kept again,
		// as the next sensor's first
	}
	var e readingEncoder
	for _, sensorID := range []int64{12, 3456789, 12} {
		e.reset(sensorID, nil)
		for _, us := range micros {
			r := store.Reading{Time: time.UnixMicro(us)}
			got, _, _ := bytes.Cut(e.append(nil, &r, nil, nil), []byte(`","datetime"`))
			if want := `{"id":"` + strconv.FormatInt(sensorID, 10) + "-" + strconv.FormatInt(us, 10); string(got) != want {
				t.Errorf("sensor %d, %d µs: id %s, want %s", sensorID, us, got, want)
			}
		}
	}
}

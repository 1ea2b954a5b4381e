package server

import (
	"encoding/json"
	"testing"
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

package apperr

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

var codeOfTests = []struct {
	name string
	err  error
	want Code
}{
	{"Nil", nil, Internal},
	{"Plain", errors.New("boom"), Internal},
	{"Error", Errorf(NotFound, "sensor %d not found", 3), NotFound},
	{"Wrapped", fmt.Errorf("get sensor: %w", Errorf(Conflict, "archived")), Conflict},
	{"Joined", errors.Join(io.EOF, Errorf(TooLarge, "too many")), TooLarge},
	{"OuterWins", Wrap(Unavailable, Errorf(Invalid, "inner"), "outer"), Unavailable},
}

func TestCodeOf(t *testing.T) {
	for _, tt := range codeOfTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeOf(tt.err); got != tt.want {
				t.Errorf("CodeOf(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}

func TestError(t *testing.T) {
	e := Errorf(Invalid, "element %d: %s", 3, "datetime is missing")
	if got, want := e.Error(), "element 3: datetime is missing"; got != want {
		t.Errorf("Errorf's Error() = %q, want %q", got, want)
	}
	if e.Code != Invalid || e.Err != nil || e.Unwrap() != nil {
		t.Errorf("Errorf = %+v, want code invalid and no cause", e)
	}
	cause := io.ErrUnexpectedEOF
	w := Wrap(Unavailable, cause, "the database is unavailable; retry later")
	if got, want := w.Error(), "the database is unavailable; retry later: unexpected EOF"; got != want {
		t.Errorf("Wrap's Error() = %q, want %q: the message, then the cause for the log", got, want)
	}
	if w.Message != "the database is unavailable; retry later" {
		t.Errorf("Wrap's Message = %q, want the client's sentence alone", w.Message)
	}
	if !errors.Is(w, cause) || w.Unwrap() != cause {
		t.Errorf("Wrap's error does not unwrap to its cause")
	}
	if got, ok := errors.AsType[*Error](fmt.Errorf("op: %w", w)); !ok || got != w {
		t.Errorf("errors.AsType through a wrap = %v, %v; want the Error", got, ok)
	}
}

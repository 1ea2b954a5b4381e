package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestBodyLimitBodiless: a request without a body goes on as it came, with
// no limited copy of it and no body kept for drainBody; one with a body
// goes on with its limited copy, and one over the limit is refused.
func TestBodyLimitBodiless(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantSame  bool // the request passed on is the one that came
		wantKept  bool // an arriving body is kept for drainBody
		wantError bool
	}{
		{name: "NoBody", wantSame: true},
		{name: "Body", body: "[]", wantKept: true},
		{name: "TooLarge", body: strings.Repeat("x", 11), wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.body != "" {
				req = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			}
			c := echo.New().NewContext(req, httptest.NewRecorder())
			var passed *http.Request
			err := bodyLimit(10)(func(c echo.Context) error { passed = c.Request(); return nil })(c)
			if got := err != nil; got != tt.wantError {
				t.Fatalf("bodyLimit: error %v, want one: %t", err, tt.wantError)
			}
			if tt.wantError {
				return
			}
			if got := passed == req; got != tt.wantSame {
				t.Errorf("the request passed on is the one that came: %t, want %t", got, tt.wantSame)
			}
			if _, got := c.Get(arrivingBodyKey).(*arrivingBody); got != tt.wantKept {
				t.Errorf("an arriving body kept: %t, want %t", got, tt.wantKept)
			}
		})
	}
}

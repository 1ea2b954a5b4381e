package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/store"
)

// TestRememberedRequests checks that a request remembered as valid leaves
// every request that differs from it to the validator: each bad input,
// sent again once the good request it differs from has been remembered,
// gets the very 400 it got before.
func TestRememberedRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	latest := fmt.Sprintf("/api/v1/org/%d/proj/%d/latest", tn.orgID, tn.projectID)
	send := func(path, query, lsn string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, e.url+path+"?"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
		if lsn != "" {
			req.Header.Set("X-Readings-Min-LSN", lsn)
		}
		res, err := e.httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, body
	}
	const good = "limit=1000"
	bad := []struct {
		name, path, query, lsn, names string
	}{
		{"LimitZero", latest, "limit=0", "", `"limit"`},
		{"LimitAboveMax", latest, "limit=1001", "", `"limit"`},
		{"LimitNotANumber", latest, "limit=x", "", `"limit"`},
		{"LimitTwice", latest, "limit=1000&limit=x", "", "limit"},
		{"Outputs", latest, good + "&outputs=maybe", "", `"outputs"`},
		{"Keys", latest, good + "&keys=colour", "", `"keys"`},
		{"CursorTooLong", latest, good + "&cursor=" + strings.Repeat("a", 61), "", `"cursor"`},
		{"Unknown", latest, good + "&from=2024-05-01T00:00:00Z", "", `"from"`},
		{"MinLSN", latest, good, "not-an-lsn", `"X-Readings-Min-LSN"`},
		{"ProjectZero", fmt.Sprintf("/api/v1/org/%d/proj/0/latest", tn.orgID), good, "", `"proj_id"`},
	}
	before := map[string][]byte{}
	for _, b := range bad {
		status, body := send(b.path, b.query, b.lsn)
		if status != http.StatusBadRequest || !bytes.Contains(body, []byte(b.names)) {
			t.Fatalf("%s, before the good request: %d %s, want 400 naming %s", b.name, status, body, b.names)
		}
		before[b.name] = body
	}
	for range 2 { // the first is validated and remembered, the second is answered from memory
		if status, body := send(latest, good, ""); status != http.StatusOK {
			t.Fatalf("GET %s?%s: %d %s, want 200", latest, good, status, body)
		}
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			if status, body := send(b.path, b.query, b.lsn); status != http.StatusBadRequest || !bytes.Equal(body, before[b.name]) {
				t.Errorf("after the good request was remembered: %d %s, want 400 %s", status, body, before[b.name])
			}
		})
	}
}

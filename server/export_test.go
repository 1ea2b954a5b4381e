package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// gatedStore is the real store, except that while it is armed a listing
// stops at row gateAt (counted across the export's chunks) until the test
// opens the gate, and an armed listing that fails reports its error. It
// lets a test see what the client receives while the server is still
// reading the database.
type gatedStore struct {
	*store.DB
	armed  atomic.Bool
	gateAt int64
	gate   chan struct{}
	rows   atomic.Int64
	failed chan error
}

func (g *gatedStore) ListReadings(ctx context.Context, sensor store.Sensor, q store.ReadingQuery, fn func(*store.Reading) error) error {
	return g.gated(ctx, fn, func(fn func(*store.Reading) error) error { return g.DB.ListReadings(ctx, sensor, q, fn) })
}

func (g *gatedStore) ReadPage(ctx context.Context, r store.PageRead, head func(*store.Sensor, []store.Flag) error, fn func(*store.Reading) error) error {
	return g.gated(ctx, fn, func(fn func(*store.Reading) error) error { return g.DB.ReadPage(ctx, r, head, fn) })
}

// gated runs list, its rows going to fn through the gate while armed.
func (g *gatedStore) gated(ctx context.Context, fn func(*store.Reading) error, list func(func(*store.Reading) error) error) error {
	if !g.armed.Load() {
		return list(fn)
	}
	err := list(func(r *store.Reading) error {
		if g.rows.Add(1) == g.gateAt {
			select {
			case <-g.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return fn(r)
	})
	if err != nil {
		g.failed <- err
	}
	return err
}

const exportTotal = 50_000

// postMany posts n readings a second apart from 2024-01-01, in batches of
// 10,000, with inputs 1, 2 and (every third reading) 3.
func postMany(t *testing.T, c *client.ClientWithResponses, tn tenant, n int) {
	t.Helper()
	base := at(t, "2024-01-01T00:00:00Z")
	for start := 0; start < n; start += 10_000 {
		var batch []client.ReadingInput
		for i := start; i < min(start+10_000, n); i++ {
			inputs := client.Values{"1": float64(i), "2": float64(i) / 7}
			if i%3 == 0 {
				inputs["3"] = -float64(i)
			}
			batch = append(batch, client.ReadingInput{Datetime: base.Add(time.Duration(i) * time.Second), Inputs: inputs})
		}
		post(t, c, tn, batch...)
	}
}

// pagedReadings reads every reading of a sensor by following Link.
func pagedReadings(t *testing.T, c *client.ClientWithResponses, tn tenant) []client.Reading {
	t.Helper()
	var all []client.Reading
	p := &client.ListReadingsParams{}
	for {
		page, header := list(t, c, tn, *p)
		all = append(all, page...)
		next, ok := linkParams(t, header)
		if !ok {
			return all
		}
		p = next
	}
}

func TestExport(t *testing.T) {
	t.Parallel()
	gated := &gatedStore{gateAt: 20_000, gate: make(chan struct{}), failed: make(chan error, 4)}
	e := newEnvWith(t, defaultConfig(), faults{reader: func(db *store.DB) sensing.Reader { gated.DB = db; return gated }})
	tn := e.newTenant("Acme")
	postMany(t, e.client(tn.tokens[store.Editor]), tn, exportTotal)
	pages := pagedReadings(t, e.client(tn.tokens[store.Viewer]), tn)
	if len(pages) != exportTotal {
		t.Fatalf("paged GETs return %d readings, want %d", len(pages), exportTotal)
	}
	gated.armed.Store(true)
	exportURL := fmt.Sprintf("%s/api/v1/org/%d/proj/%d/readings/%d/export", e.url, tn.orgID, tn.projectID, tn.sensorID)
	get := func(ctx context.Context, query string, requestID ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", exportURL+query, nil)
		req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
		for _, id := range requestID {
			req.Header.Set("X-Request-ID", id)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 200 {
			t.Fatalf("export: %d", res.StatusCode)
		}
		return res
	}

	t.Run("StreamsAndMatchesPages", func(t *testing.T) {
		gated.rows.Store(0)
		res := get(context.Background(), "?format=ndjson")
		defer res.Body.Close()
		if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("Content-Type %q", ct)
		}
		lines := bufio.NewScanner(res.Body)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		got := 0
		check := func() {
			var r client.Reading
			if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
				t.Fatalf("line %d: %v: %s", got, err, lines.Bytes())
			}
			want := pages[got]
			if r.Id != want.Id || r.Datetime != want.Datetime || !equalValues(r.Inputs, want.Inputs) {
				t.Fatalf("reading %d: export %+v, pages %+v", got, r, want)
			}
			got++
		}
		// The server holds at row 20,000 until the gate opens: the first
		// thousand rows can only arrive if it sends as it reads.
		received := make(chan bool)
		go func() {
			for got < 1000 && lines.Scan() {
				check()
			}
			received <- got == 1000
		}()
		select {
		case ok := <-received:
			if !ok {
				t.Fatalf("the export ended after %d rows", got)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no rows reached the client while the server was still reading: the export is buffered, not streamed")
		}
		close(gated.gate)
		for lines.Scan() {
			check()
		}
		if err := lines.Err(); err != nil {
			t.Fatal(err)
		}
		if got != exportTotal {
			t.Errorf("the export has %d readings, want %d", got, exportTotal)
		}
		select {
		case err := <-gated.failed:
			t.Errorf("a query ended with %v", err)
		default:
		}
	})

	t.Run("CSV", func(t *testing.T) {
		res := get(context.Background(), "?datetime__gte=2024-01-01T00:00:01Z&datetime__lt=2024-01-01T00:00:04Z")
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		want := "datetime,1,2,3\n" +
			"2024-01-01T00:00:01.000Z,1,0.14285714285714285,\n" +
			"2024-01-01T00:00:02.000Z,2,0.2857142857142857,\n" +
			"2024-01-01T00:00:03.000Z,3,0.42857142857142855,-3\n"
		if string(body) != want {
			t.Errorf("CSV export =\n%s\nwant\n%s", body, want)
		}
		if cd := res.Header.Get("Content-Disposition"); !strings.Contains(cd, fmt.Sprintf(`filename="sensor-%d.csv"`, tn.sensorID)) {
			t.Errorf("Content-Disposition %q", cd)
		}
	})

	t.Run("ClientLeavingStopsTheQuery", func(t *testing.T) {
		gated.rows.Store(0)
		gated.gate = make(chan struct{}) // closed: never; the client leaves instead
		ctx, cancel := context.WithCancel(context.Background())
		res := get(ctx, "?format=csv", "test-client-leaves")
		if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		cancel()
		res.Body.Close()
		// The export ends, whether its client's leaving is found by a
		// write or by the chunk query it cancels (then held at the gate,
		// which never opens): it has its access-log line, and it read no
		// further. The client's leaving is its own doing: a 499, not an
		// error.
		line := e.logLine(t, "test-client-leaves")
		if n := gated.rows.Load(); n >= exportTotal {
			t.Errorf("the export read all %d rows after its client left", n)
		}
		if line["status"] != 499.0 || line["level"] != "WARN" {
			t.Errorf("the export whose client left is logged as %v at %v, want 499 at WARN: %v", line["status"], line["level"], line)
		}
		if !strings.Contains(e.metrics(), `readings_http_requests_total{operation="exportReadings",status="499"} 1`) {
			t.Error("/metrics does not count the export whose client left as a 499")
		}
	})
}

// cutStore fails every listing that does not start at the first instant:
// an export's second chunk, as if the database went away part way.
type cutStore struct{ *store.DB }

func (c cutStore) ListReadings(ctx context.Context, sensor store.Sensor, q store.ReadingQuery, fn func(*store.Reading) error) error {
	if q.From.After(store.MinTime) {
		return errCut
	}
	return c.DB.ListReadings(ctx, sensor, q, fn)
}

func (c cutStore) ReadPage(ctx context.Context, r store.PageRead, head func(*store.Sensor, []store.Flag) error, fn func(*store.Reading) error) error {
	if r.Query.From.After(store.MinTime) {
		return errCut
	}
	return c.DB.ReadPage(ctx, r, head, fn)
}

var errCut = apperr.Errorf(apperr.Unavailable, "the database is unavailable; retry later")

// An export the database fails part way is cut, so that the client sees a
// broken transfer, and it has its access-log line, as an error, and its
// count in the metrics.
func TestExportCutByTheDatabase(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, defaultConfig(), faults{reader: func(db *store.DB) sensing.Reader { return cutStore{db} }})
	tn := e.newTenant("Acme")
	postMany(t, e.client(tn.tokens[store.Editor]), tn, 2500)
	req, _ := http.NewRequest("GET", e.url+readingsPath(tn)+"/export", nil)
	req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
	req.Header.Set("X-Request-ID", "test-cut")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("export: %d, want 200 then a cut", res.StatusCode)
	}
	if err == nil {
		t.Fatalf("the export read as complete (%d bytes); want a broken transfer", len(body))
	}
	if rows := strings.Count(string(body), "\n"); rows < 1 || rows > 1001 {
		t.Errorf("the client got %d lines before the cut, want the header and the first chunk at most", rows)
	}
	line := e.logLine(t, "test-cut")
	if line["status"] != 500.0 || line["level"] != "ERROR" || !strings.Contains(fmt.Sprint(line["error"]), "unavailable") {
		t.Errorf("the cut export is logged as %v at %v (%v), want 500 at ERROR with the cause", line["status"], line["level"], line["error"])
	}
	if !strings.Contains(e.metrics(), `readings_http_requests_total{operation="exportReadings",status="500"} 1`) {
		t.Error("/metrics does not count the cut export")
	}
}

func TestExportEmptyAndInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	res, body := e.do(tn.tokens[store.Viewer], "GET",
		fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/export", tn.orgID, tn.projectID, tn.sensorID), "", nil)
	if res.StatusCode != 200 || string(body) != "datetime\n" {
		t.Errorf("export of no readings: %d %q, want a header row alone", res.StatusCode, body)
	}
	// A sensor with a blueprint: its columns are its inputs, then outputs.
	sensor, _ := e.db.GetSensor(context.Background(), store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	in, out := sensor.Instance.Inputs, sensor.Instance.Outputs
	res, body = e.do(tn.tokens[store.Viewer], "GET",
		fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/export?outputs=true", tn.orgID, tn.projectID, tn.instanceID), "", nil)
	want := fmt.Sprintf("datetime,%d,%d,%d,%d\n", in[0].ID, in[1].ID, out[0].ID, out[1].ID)
	if res.StatusCode != 200 || string(body) != want {
		t.Errorf("export header %q, want %q", body, want)
	}
	missing, body := e.do(tn.tokens[store.Viewer], "GET",
		fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/999999/export", tn.orgID, tn.projectID), "", nil)
	wantError(t, missing.StatusCode, body, 404, "not_found")
}

func TestListReadingsAsCSV(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	post(t, e.client(tn.tokens[store.Editor]), tn,
		reading(t, "2024-05-01T12:00:00Z", client.Values{"7": 1.5}),
		reading(t, "2024-05-01T12:00:01Z", client.Values{"3": 2, "7": 2.5}))
	for _, tt := range []struct {
		accept string
		csv    bool
	}{
		{"text/csv", true},
		{"text/csv, application/json;q=0.5", true},
		{"application/json, text/csv;q=0.9", false},
		{"*/*", false},
		{"", false},
		{"text/*", true},
	} {
		req, _ := http.NewRequest("GET", e.url+readingsPath(tn), nil)
		req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
		if tt.accept != "" {
			req.Header.Set("Accept", tt.accept)
		}
		res, err := e.httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		gotCSV := strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv")
		if gotCSV != tt.csv {
			t.Errorf("Accept %q: Content-Type %q, want CSV=%v", tt.accept, res.Header.Get("Content-Type"), tt.csv)
			continue
		}
		want := "datetime,3,7\n2024-05-01T12:00:00.000Z,,1.5\n2024-05-01T12:00:01.000Z,2,2.5\n"
		if tt.csv && string(body) != want {
			t.Errorf("Accept %q: %q, want %q", tt.accept, body, want)
		}
	}
}

// logLine returns the access-log line of the request with requestID,
// waiting for it: a request is logged once its handler has returned, which
// may be after its client saw the end.
func (e *env) logLine(t *testing.T, requestID string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, raw := range strings.Split(e.logs.String(), "\n") {
			var line map[string]any
			if json.Unmarshal([]byte(raw), &line) == nil && line["msg"] == "request" && line["request_id"] == requestID {
				return line
			}
		}
	}
	t.Fatalf("no access-log line for request %s", requestID)
	return nil
}

// metrics returns what /metrics shows.
func (e *env) metrics() string {
	_, body := e.do("", "GET", "/metrics", "", nil)
	return string(body)
}

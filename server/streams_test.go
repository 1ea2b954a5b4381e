package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// slowReaders is how many clients TestSlowExportsHoldNoConnection has read
// exports at about 1 KiB/s: twice the test pool's four connections.
const slowReaders = 8

// Slow clients hold no shared resource: eight exports of 200,000 readings
// read at about 1 KiB/s, against a pool of four connections, while another
// organization's requests all succeed and the pool has connections to
// spare. Read in one query, each export would pin a connection until its
// client finished, and the other organization would wait its deadline for
// a 503.
func TestSlowExportsHoldNoConnection(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.DBTimeout = 5 * time.Second
	e := newEnvWith(t, cfg, faults{})
	slow, other := e.newTenant("Slow"), e.newTenant("Other")
	// Ten random inputs of 17 or so digits: about 40 MB of CSV, sent
	// uncompressed, far more than the sockets between the test and the
	// server can buffer. Inserted in SQL: the API's ingest is not what this
	// test is about.
	if _, err := e.pool.Exec(t.Context(), `
INSERT INTO readings (sensor_id, datetime, input_ids, vals)
SELECT $1, '2024-01-01T00:00:00Z'::timestamptz + i * interval '1 second',
       '{1,2,3,4,5,6,7,8,9,10}', ARRAY(SELECT random() + i * 0 FROM generate_series(1, 10))
FROM generate_series(0, 199999) AS i`, slow.sensorID); err != nil {
		t.Fatal(err)
	}
	if got := e.pool.Stat().MaxConns(); got >= slowReaders {
		t.Fatalf("the test pool has %d connections; it needs fewer than %d readers", got, slowReaders)
	}

	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan error, slowReaders)
	done := make(chan struct{}, slowReaders)
	for range slowReaders {
		go func() {
			defer func() { done <- struct{}{} }()
			req, _ := http.NewRequestWithContext(ctx, "GET", e.url+readingsPath(slow)+"/export", nil)
			req.Header.Set("Authorization", "Bearer "+slow.tokens[store.Viewer])
			req.Header.Set("Accept-Encoding", "identity")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				started <- err
				return
			}
			defer res.Body.Close()
			if res.StatusCode != 200 {
				started <- fmt.Errorf("export: status %d", res.StatusCode)
				return
			}
			kib := make([]byte, 1024)
			if _, err := io.ReadFull(res.Body, kib); err != nil {
				started <- err
				return
			}
			started <- nil
			for ctx.Err() == nil {
				time.Sleep(time.Second)
				if _, err := io.ReadFull(res.Body, kib); err != nil {
					return
				}
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range slowReaders {
			<-done
		}
	})
	for i := range slowReaders {
		select {
		case err := <-started:
			if err != nil {
				t.Fatalf("slow export %d: %v", i+1, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d slow exports started in 30 s: the ones that did hold the database", i, slowReaders)
		}
	}

	viewer, editor := e.client(other.tokens[store.Viewer]), e.client(other.tokens[store.Editor])
	succeeds := func(what string, res interface{ StatusCode() int }, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("another organization's %s while the slow exports read: %v", what, err)
		}
		if res.StatusCode() != 200 {
			t.Fatalf("another organization's %s while the slow exports read: status %d, want 200", what, res.StatusCode())
		}
	}
	for i := range 10 {
		posted, err := editor.PostReadingsWithResponse(t.Context(), other.orgID, other.projectID, other.sensorID, nil,
			client.PostReadingsJSONRequestBody{reading(t, fmt.Sprintf("2024-05-01T12:00:%02dZ", i), client.Values{"1": float64(i)})})
		succeeds("POST of readings", posted, err)
		listed, err := viewer.ListReadingsWithResponse(t.Context(), other.orgID, other.projectID, other.sensorID, nil)
		succeeds("GET of readings", listed, err)
		sensors, err := viewer.ListSensorsWithResponse(t.Context(), other.orgID, other.projectID, nil)
		succeeds("GET of sensors", sensors, err)
	}
	// Between chunks an export holds no connection: with every client
	// reading slower than the server sends, the pool falls idle.
	for deadline := time.Now().Add(30 * time.Second); e.pool.Stat().AcquiredConns() > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still held while the exports wait for their slow clients", e.pool.Stat().AcquiredConns())
		}
	}
}

// heldStore holds every listing until the test releases it, and says when
// one has started: an export that stays open for as long as the test likes.
type heldStore struct {
	*store.DB
	held, release chan struct{}
}

func (h heldStore) ListReadings(ctx context.Context, sensor store.Sensor, q store.ReadingQuery, fn func(*store.Reading) error) error {
	if err := h.hold(ctx); err != nil {
		return err
	}
	return h.DB.ListReadings(ctx, sensor, q, fn)
}

func (h heldStore) ReadPage(ctx context.Context, r store.PageRead, head func(*store.Sensor, []store.Flag) error, fn func(*store.Reading) error) error {
	if err := h.hold(ctx); err != nil {
		return err
	}
	return h.DB.ReadPage(ctx, r, head, fn)
}

func (h heldStore) hold(ctx context.Context) error {
	h.held <- struct{}{}
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Exports open at once are capped per token and in total, with a 429 that
// says when to retry; other requests are not counted, and a slot is free
// again once its export has ended.
func TestStreamCaps(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.MaxStreams, cfg.MaxStreamsPerToken = 3, 2
	held := heldStore{held: make(chan struct{}), release: make(chan struct{})}
	e := newEnvWith(t, cfg, faults{reader: func(db *store.DB) sensing.Reader { held.DB = db; return held }})
	acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
	export := func(tn tenant, role store.Role) (*http.Response, []byte) {
		return e.do(tn.tokens[role], "GET", readingsPath(tn)+"/export", "", nil)
	}
	ended := make(chan int, 3)
	for _, role := range []store.Role{store.Viewer, store.Viewer, store.Editor} {
		go func() {
			res, _ := export(acme, role)
			ended <- res.StatusCode
		}()
		<-held.held
	}

	res, body := export(acme, store.Viewer)
	wantError(t, res.StatusCode, body, 429, "rate_limited")
	if got := res.Header.Get("Retry-After"); got == "" {
		t.Error("a 429 for a token's open exports has no Retry-After")
	}
	res, body = export(globex, store.Viewer)
	wantError(t, res.StatusCode, body, 429, "rate_limited")
	if got := res.Header.Get("Retry-After"); got == "" {
		t.Error("a 429 for the service's open exports has no Retry-After")
	}
	if res, err := e.client(globex.tokens[store.Viewer]).ListSensorsWithResponse(t.Context(), globex.orgID, globex.projectID, nil); err != nil || res.StatusCode() != 200 {
		t.Fatalf("an ordinary request while the exports are capped: %v, want 200", err)
	}
	if !strings.Contains(e.metrics(), "readings_http_open_streams 3") {
		t.Error("/metrics does not show the 3 open exports")
	}

	close(held.release)
	for range 3 {
		if status := <-ended; status != 200 {
			t.Errorf("a held export ended with %d, want 200", status)
		}
	}
	go func() { <-held.held }()
	if res, body := export(globex, store.Viewer); res.StatusCode != 200 {
		t.Errorf("an export once the others ended: %d %s, want 200", res.StatusCode, body)
	}
}

// A logger's file is stored as it arrives, in one transaction, so a slow
// upload holds a database connection (and its sensor's lock) for as long as
// it sends: uploads take the same slots as exports, and past them get a 429
// while other requests, JSON batches included, go on.
func TestFileUploadsTakeStreamSlots(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.MaxStreams, cfg.MaxStreamsPerToken = 2, 1
	e := newEnvWith(t, cfg, faults{})
	acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
	token := acme.tokens[store.Editor]

	body, send := io.Pipe()
	t.Cleanup(func() { send.CloseWithError(io.ErrUnexpectedEOF) }) // else a failure leaves the server waiting on it
	ended := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.url+readingsPath(acme), body)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "text/csv")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			ended <- 0
			return
		}
		res.Body.Close()
		ended <- res.StatusCode
	}()
	if _, err := io.WriteString(send, "datetime,1\n2024-05-01T00:00:00Z,1.5\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(e.metrics(), "readings_http_open_streams 1"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow upload never took a stream slot")
		}
	}

	file := func(tn tenant, token string) (*http.Response, []byte) {
		return e.do(token, "POST", readingsPath(tn), "text/csv", strings.NewReader("datetime,1\n2024-05-02T00:00:00Z,2.5\n"))
	}
	res, got := file(acme, token)
	wantError(t, res.StatusCode, got, 429, "rate_limited")
	if res.Header.Get("Retry-After") == "" {
		t.Error("a 429 for a token's open uploads has no Retry-After")
	}
	// Not to Acme's sensor, whose lock the held upload has.
	if res, got := e.do(globex.tokens[store.Editor], "POST", readingsPath(globex), "application/json", strings.NewReader(`[{"datetime":"2024-05-03T00:00:00Z","inputs":{"1":3.5}}]`)); res.StatusCode != 200 {
		t.Errorf("a JSON batch beside the held upload: %d %s, want 200", res.StatusCode, got)
	}
	if res, got := file(globex, globex.tokens[store.Editor]); res.StatusCode != 200 {
		t.Errorf("another organization's upload beside the held one: %d %s, want 200", res.StatusCode, got)
	}

	send.Close()
	if status := <-ended; status != 200 {
		t.Fatalf("the slow upload ended with %d, want 200", status)
	}
	if res, got := file(acme, token); res.StatusCode != 200 {
		t.Errorf("an upload once the slow one ended: %d %s, want 200", res.StatusCode, got)
	}
}

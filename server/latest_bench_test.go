package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sensorreadings/readings/authcache"
	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/server"
	"github.com/sensorreadings/readings/store"
)

// cannedLatest is the store with a project's latest values read once, and
// answered from memory since.
type cannedLatest struct {
	*store.DB
	latest []store.Latest
}

func (c *cannedLatest) LatestReadings(context.Context, int64, int64, int64, int, bool) ([]store.Latest, bool, error) {
	return c.latest, false, nil
}

// BenchmarkLatestServed measures what row 10b of `make bench` costs the
// service besides the database and the network: a project's latest values
// (100 sensors of ten inputs, as BenchmarkGetReadings/Latest) answered from
// memory, through the whole middleware chain, the handler and the
// encoding, into a recorder. Profile it with -cpuprofile to cost each
// middleware.
func BenchmarkLatestServed(b *testing.B) {
	canned := &cannedLatest{}
	var kept *authcache.Cache
	e := newEnvWith(b, defaultConfig(), faults{
		deps: func(d *server.Deps, db *store.DB) {
			kept = authcache.New(db, slog.New(slog.DiscardHandler))
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); kept.Run(ctx, db, time.Second) }()
			b.Cleanup(func() { stop(); <-done })
			d.Authenticator = kept
		},
		reader: func(db *store.DB) sensing.Reader { canned.DB = db; return canned },
	})
	for !kept.Hearing() {
		time.Sleep(time.Millisecond)
	}
	tn := e.newTenant("Bench")
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	ctx := context.Background()
	for i := range 98 {
		if _, err := e.db.CreateSensor(ctx, tn.orgID, tn.projectID, fmt.Sprintf("bench %d", i), "", nil); err != nil {
			b.Fatal(err)
		}
	}
	sensors, _, err := e.db.ListSensors(ctx, tn.orgID, tn.projectID, 0, 1000)
	if err != nil {
		b.Fatal(err)
	}
	project := fmt.Sprintf("/api/v1/org/%d/proj/%d", tn.orgID, tn.projectID)
	for _, s := range sensors {
		if s.BlueprintID != nil {
			continue
		}
		if status := send(b, http.MethodPost, fmt.Sprintf("%s%s/readings/%d", ts.URL, project, s.ID), tn.tokens[store.Editor], batchtest.BenchBodyOf(10)); status != http.StatusOK {
			b.Fatalf("POST: %d", status)
		}
	}
	if canned.latest, _, err = e.db.LatestReadings(ctx, tn.orgID, tn.projectID, 0, 1000, false); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, project+"/latest?limit=1000", nil)
	req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
	req.Header.Set("User-Agent", "Go-http-client/1.1")
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		e.srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET latest: %d %s", w.Code, w.Body)
		}
	}
}

package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/sensing"
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
	e := newCachedEnvWith(b, faults{reader: func(db *store.DB) sensing.Reader { canned.DB = db; return canned }})
	tn := e.newTenant("Bench")
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	project := fmt.Sprintf("/api/v1/org/%d/proj/%d", tn.orgID, tn.projectID)
	fillProject(b, e, tn, ts.URL+project, func(int64) []byte { return batchtest.BenchBodyOf(10) })
	var err error
	if canned.latest, _, err = e.db.LatestReadings(context.Background(), tn.orgID, tn.projectID, 0, 1000, false); err != nil {
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

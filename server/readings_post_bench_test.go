package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/store"
)

// BenchmarkPostReadings measures the whole POST path of a batch of new
// readings, from the client's request to PostgreSQL's answer: 1,000
// readings of 10 inputs as `make bench` posts them, each batch to a sensor
// of its own so that every reading is new. The service is served as main
// serves it, without the contract check of the tests' server. Beside the
// time, it reports the CPU time of this process per reading: the
// service's share (with the client's small one), without PostgreSQL's.
// Profile it with -cpuprofile, focused on ServeHTTP, to see where the
// service's share goes.
func BenchmarkPostReadings(b *testing.B) {
	e := newEnv(b)
	tn := e.newTenant("Bench")
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	body := batchtest.BenchBody()
	paths := make([]string, b.N)
	for i := range paths {
		sensor, err := e.db.CreateSensor(context.Background(), tn.orgID, tn.projectID, fmt.Sprintf("bench %d", i), "", nil)
		if err != nil {
			b.Fatal(err)
		}
		paths[i] = fmt.Sprintf("%s/api/v1/org/%d/proj/%d/readings/%d", ts.URL, tn.orgID, tn.projectID, sensor.ID)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := batchtest.ProcessCPU(b)
	for i := range b.N {
		req, err := http.NewRequest("POST", paths[i], bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Editor])
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("POST: %s", res.Status)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/reading")
	b.ReportMetric(float64((batchtest.ProcessCPU(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-ns/reading")
}

package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// BenchmarkPostReadings measures the whole POST path of a batch of new
// readings, from the client's request to PostgreSQL's answer: 1,000
// readings of 10 inputs as `make bench` posts them (Batch1000), and 10 as
// a logger posts them (Batch10, row 3s of `make bench`), each batch to a
// sensor of its own so that every reading is new. The service is served
// as main serves it, without the contract check of the tests' server.
// Beside the time, it reports the CPU time per reading of this process
// (the service's share, with the client's small one) and of PostgreSQL
// (storetest.ServerCPU; run it alone). The tokens are kept between
// requests, as main wires the service (newCachedEnv), so that each POST
// pays the service's cost of authenticating it, not a query's. Profile it
// with -cpuprofile,
// focused on ServeHTTP, to see where the service's share goes.
func BenchmarkPostReadings(b *testing.B) {
	for _, size := range []int{1000, 10} {
		b.Run(fmt.Sprintf("Batch%d", size), func(b *testing.B) { benchmarkPostReadings(b, size) })
	}
}

func benchmarkPostReadings(b *testing.B, size int) {
	e := newCachedEnv(b)
	tn := e.newTenant("Bench")
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	body := batchtest.BenchBody()
	if size < 1000 {
		body = batchtest.BenchBodyOf(size)
	}
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
	cpu, pg := batchtest.ProcessCPU(b), storetest.ServerCPU(b, e.pool)
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
		// Read to its end, so that the connection is kept for the next.
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			b.Fatalf("POST: %s", res.Status)
		}
	}
	readings := float64(b.N * size)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/readings, "ns/reading")
	b.ReportMetric(float64((batchtest.ProcessCPU(b)-cpu).Nanoseconds())/readings, "cpu-ns/reading")
	b.ReportMetric(float64((storetest.ServerCPU(b, e.pool)-pg).Nanoseconds())/readings, "pg-cpu-ns/reading")
}

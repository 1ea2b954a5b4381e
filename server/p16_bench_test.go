package server_test

import (
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"

	"net/http/httptest"
)

func cpuSplit(b *testing.B) (time.Duration, time.Duration) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano()), time.Duration(u.Stime.Nano())
}

// BenchmarkP16Turns alternates net's connections and blocking ones in
// turns of 100 requests (SCRATCH).
func BenchmarkP16Turns(b *testing.B) {
	e := newCachedEnv(b)
	tn := e.newTenant("Bench")
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	project := fmt.Sprintf("%s/api/v1/org/%d/proj/%d", ts.URL, tn.orgID, tn.projectID)
	if status := send(b, http.MethodPost, fmt.Sprintf("%s/readings/%d", project, tn.sensorID), tn.tokens[store.Editor], batchtest.BenchBody()); status != http.StatusOK {
		b.Fatalf("POST: %d", status)
	}
	row6b := benchBlueprintSensor(b, e, tn)
	if status := send(b, http.MethodPost, fmt.Sprintf("%s/readings/%d", project, row6b.ID), tn.tokens[store.Editor], benchBodyOf(row6b)); status != http.StatusOK {
		b.Fatalf("POST: %d", status)
	}
	for _, c := range []struct {
		name string
		path string
	}{
		{"Page", fmt.Sprintf("%s/readings/%d?limit=1000&outputs=false&datetime__gte=2024-01-01T00:00:00Z", project, tn.sensorID)},
		{"FiveOutputsPageOutputs", fmt.Sprintf("%s/readings/%d?limit=1000&outputs=true&datetime__gte=2024-01-01T00:00:00Z", project, row6b.ID)},
	} {
		b.Run(c.name, func(b *testing.B) {
			var user, sys, pg [2]time.Duration
			var n [2]int
			for b.Loop() {
				for turn := range 2 {
					store.NonBlocking.Store(turn == 0)
					e.pool.Reset()
					for range 5 { // warm the new connection
						send(b, http.MethodGet, c.path, tn.tokens[store.Viewer], nil)
					}
					u0, s0 := cpuSplit(b)
					p0 := storetest.ServerCPU(b, e.pool)
					for range 100 {
						if status := send(b, http.MethodGet, c.path, tn.tokens[store.Viewer], nil); status != http.StatusOK {
							b.Fatalf("GET: %d", status)
						}
					}
					u1, s1 := cpuSplit(b)
					pg[turn] += storetest.ServerCPU(b, e.pool) - p0
					user[turn] += u1 - u0
					sys[turn] += s1 - s0
					n[turn] += 100
				}
			}
			for turn, name := range []string{"net", "blocking"} {
				b.ReportMetric(float64(user[turn].Microseconds())/float64(n[turn]), name+"-user-µs/req")
				b.ReportMetric(float64(sys[turn].Microseconds())/float64(n[turn]), name+"-sys-µs/req")
				b.ReportMetric(float64(pg[turn].Microseconds())/float64(n[turn]), name+"-pg-µs/req")
			}
		})
	}
}

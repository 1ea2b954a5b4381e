package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/sensorreadings/readings/authcache"
	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/server"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// newCachedEnv is newEnv with the tokens kept between requests, as main
// wires the service (authcache): a benchmark of a request then pays what
// the service pays to authenticate it, not a query.
func newCachedEnv(b *testing.B) *env { return newCachedEnvWith(b, faults{}) }

// newCachedEnvWith is newCachedEnv with the faults f injects; f.deps, if
// any, runs before the cache is wired in.
func newCachedEnvWith(b *testing.B, f faults) *env {
	var kept *authcache.Cache
	deps := f.deps
	f.deps = func(d *server.Deps, db *store.DB) {
		if deps != nil {
			deps(d, db)
		}
		kept = authcache.New(db, slog.New(slog.DiscardHandler))
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); kept.Run(ctx, db, time.Second) }()
		b.Cleanup(func() { stop(); <-done })
		d.Authenticator = kept
	}
	e := newEnvWith(b, defaultConfig(), f)
	for !kept.Hearing() {
		time.Sleep(time.Millisecond)
	}
	return e
}

// fillProject makes tn's project a hundred sensors, its two and 98 more,
// and posts body(sensor) to each but the blueprint's instance; project is
// the project's URL. It returns how many sensors the project has.
func fillProject(b *testing.B, e *env, tn tenant, project string, body func(sensorID int64) []byte) int {
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
	for _, s := range sensors {
		if s.BlueprintID != nil {
			continue
		}
		if status := send(b, http.MethodPost, fmt.Sprintf("%s/readings/%d", project, s.ID), tn.tokens[store.Editor], body(s.ID)); status != http.StatusOK {
			b.Fatalf("POST: %d", status)
		}
	}
	return len(sensors)
}

// BenchmarkGetReadings measures the read paths of rows 6 and 10b of `make
// bench` from the client's request to the last byte of the answer: a page
// of 1,000 readings of 10 inputs (Page), a page of 1,000 readings of a
// 2-input, 2-output blueprint without and with its outputs
// (PiezometerPage, PiezometerPageOutputs), the same of row 6b's 10-input,
// 5-output blueprint (FiveOutputsPage, FiveOutputsPageOutputs), and the latest values of a
// project of 100 sensors (Latest), beside the store's own call that
// answers it (LatestRaw, row 10). Beside the time, it reports the CPU
// time per request of this process (the service's share, with the
// client's small one) and of PostgreSQL (storetest.ServerCPU; run it
// alone). The tokens are kept between requests, as main wires the
// service (authcache). Profile it with -cpuprofile, focused on ServeHTTP.
func BenchmarkGetReadings(b *testing.B) {
	e := newCachedEnv(b)
	tn := e.newTenant("Bench")
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	ctx := context.Background()
	project := fmt.Sprintf("%s/api/v1/org/%d/proj/%d", ts.URL, tn.orgID, tn.projectID)
	// The tenant's two sensors, then more to make a hundred, each but the
	// piezometer with ten readings; the tenant's plain sensor with a page.
	sensors := fillProject(b, e, tn, project, func(id int64) []byte {
		if id == tn.sensorID {
			return batchtest.BenchBody()
		}
		return batchtest.BenchBodyOf(10)
	})
	// And the piezometer a page of its two inputs, for its outputs.
	piezometer, err := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte{'['}
	for i := range 1000 {
		if i > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `{"datetime":"2024-01-01T00:%02d:%02dZ","inputs":{"%d":%d.%d,"%d":%d.25}}`,
			i/60, i%60, piezometer.Instance.Inputs[0].ID, 2500+i, i%7, piezometer.Instance.Inputs[1].ID, i%30)
	}
	body = append(body, ']')
	if status := send(b, http.MethodPost, fmt.Sprintf("%s/readings/%d", project, tn.instanceID), tn.tokens[store.Editor], body); status != http.StatusOK {
		b.Fatalf("POST: %d", status)
	}
	// And row 6b's sensor: the bench's five outputs over ten inputs.
	row6b := benchBlueprintSensor(b, e, tn)
	if status := send(b, http.MethodPost, fmt.Sprintf("%s/readings/%d", project, row6b.ID), tn.tokens[store.Editor], benchBodyOf(row6b)); status != http.StatusOK {
		b.Fatalf("POST: %d", status)
	}
	// And row 12's: row 6b's sensor again, its x2 linked to the digits of
	// a sensor of the blueprint that reads once a minute.
	barometer, linked := benchBlueprintSensor(b, e, tn), benchBlueprintSensor(b, e, tn)
	for _, p := range []struct {
		sensor store.Sensor
		every  int
	}{{barometer, 60}, {linked, 1}} {
		if status := send(b, http.MethodPost, fmt.Sprintf("%s/readings/%d", project, p.sensor.ID), tn.tokens[store.Editor], benchBodyEvery(p.sensor, p.every)); status != http.StatusOK {
			b.Fatalf("POST: %d", status)
		}
	}
	links := client.LinksUpdate{"x2": {SensorId: barometer.ID, Key: "digits", Staleness: new(3600)}}
	if res, err := e.client(tn.tokens[store.Admin]).UpdateLinksWithResponse(ctx, tn.orgID, tn.projectID, linked.ID, links); err != nil || res.JSON200 == nil {
		b.Fatalf("link x2: %v", err)
	}
	page := func(sensor int64, outputs bool) string {
		return fmt.Sprintf("%s/readings/%d?limit=1000&outputs=%t&datetime__gte=2024-01-01T00:00:00Z", project, sensor, outputs)
	}
	get := func(path string) func(b *testing.B) {
		return func(b *testing.B) {
			if status := send(b, http.MethodGet, path, tn.tokens[store.Viewer], nil); status != http.StatusOK {
				b.Fatalf("GET: %d", status)
			}
		}
	}
	for _, c := range []struct {
		name string
		call func(b *testing.B)
	}{
		{"Page", get(page(tn.sensorID, false))},
		{"PiezometerPage", get(page(tn.instanceID, false))},
		{"PiezometerPageOutputs", get(page(tn.instanceID, true))},
		{"FiveOutputsPage", get(page(row6b.ID, false))},
		{"FiveOutputsPageOutputs", get(page(row6b.ID, true))},
		{"FiveOutputsPageLinked", get(page(linked.ID, true))},
		{"Latest", get(project + "/latest?limit=1000")},
		{"LatestRaw", func(b *testing.B) {
			latest, _, err := e.db.LatestReadings(ctx, tn.orgID, tn.projectID, 0, 1000, false)
			// The project's sensors listed above, and row 6b's, row 12's
			// barometer and its linked sensor made since.
			if want := sensors + 3; err != nil || len(latest) != want {
				b.Fatalf("LatestReadings: %d sensors, %v; want %d", len(latest), err, want)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu, pg := batchtest.ProcessCPU(b), storetest.ServerCPU(b, e.pool)
			for b.Loop() {
				c.call(b)
			}
			b.ReportMetric(float64((batchtest.ProcessCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64((storetest.ServerCPU(b, e.pool)-pg).Nanoseconds())/float64(b.N), "pg-cpu-ns/op")
		})
	}
}

// plainClient asks for no gzip, as the bench's clients do.
var plainClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// send sends a request with the token and reads the answer to its end, so
// that the connection is kept for the next, and returns its status.
func send(b *testing.B, method, url, token string, body []byte) int {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := plainClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		b.Fatal(err)
	}
	return res.StatusCode
}

// benchBlueprintSensor is a sensor of tn's project with an instance of
// the blueprint of rows 6b and 9 of `make bench` (scripts/bench): a
// vibrating-wire piezometer's five outputs over inputs x1…x10.
func benchBlueprintSensor(b *testing.B, e *env, tn tenant) store.Sensor {
	ctx := context.Background()
	g, r0, k := 0.1, 9000.0, 0.05
	bp := store.Blueprint{
		Name: "Bench piezometer",
		Constants: []store.BlueprintConstant{
			{Key: "G", Name: "G", Default: &g}, {Key: "R0", Name: "R0", Default: &r0}, {Key: "K", Name: "K", Default: &k},
		},
		Outputs: []store.BlueprintOutput{
			{Key: "digits", Name: "digits", Formula: "x1^2 / 1000"},
			{Key: "pressure", Name: "pressure", Formula: "G * (R0 - digits)"},
			{Key: "corrected", Name: "corrected", Formula: "pressure + K * (x2 - 20)"},
			{Key: "head", Name: "head", Formula: "pressure / 9.80665"},
			{Key: "alarm", Name: "alarm", Formula: "abs(pressure) > 150 ? 1 : 0"},
		},
	}
	for i := 1; i <= 10; i++ {
		bp.Inputs = append(bp.Inputs, store.BlueprintInput{Key: fmt.Sprintf("x%d", i), Name: fmt.Sprintf("x%d", i)})
	}
	blueprint, err := e.db.CreateBlueprint(ctx, tn.orgID, bp)
	if err != nil {
		b.Fatal(err)
	}
	inst, err := blueprint.Instantiate(nil)
	if err != nil {
		b.Fatal(err)
	}
	sensor, err := e.db.CreateSensor(ctx, tn.orgID, tn.projectID, "bench piezometer", "", &store.Attachment{BlueprintID: blueprint.ID, Instance: inst})
	if err != nil {
		b.Fatal(err)
	}
	return sensor
}

// benchBodyOf is batchtest.BenchBody's 1,000 readings of ten random inputs
// in [0, 1000), as sensor's inputs x1…x10.
func benchBodyOf(sensor store.Sensor) []byte { return benchBodyEvery(sensor, 1) }

// benchBodyEvery is benchBodyOf's readings every every seconds.
func benchBodyEvery(sensor store.Sensor, every int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	body := []byte{'['}
	for i := range 1000 {
		if i > 0 {
			body = append(body, ',')
		}
		body = fmt.Appendf(body, `{"datetime":%q,"inputs":{`, start.Add(time.Duration(i*every)*time.Second).Format(time.RFC3339))
		for k, in := range sensor.Instance.Inputs {
			if k > 0 {
				body = append(body, ',')
			}
			body = fmt.Appendf(body, `"%d":%s`, in.ID, strconv.FormatFloat(rng.Float64()*1000, 'f', -1, 64))
		}
		body = append(body, "}}"...)
	}
	return append(body, ']')
}

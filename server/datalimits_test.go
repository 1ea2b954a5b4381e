package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// wideReading is a reading at minute i of 2024-05-01 with inputs ids
// first to first+n-1, each valued id + i/7.
func wideReading(i int, first, n int64) client.ReadingInput {
	inputs := client.Values{}
	for id := first; id < first+n; id++ {
		inputs[strconv.FormatInt(id, 10)] = float64(id) + float64(i)/7
	}
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	return client.ReadingInput{Datetime: start.Add(time.Duration(i) * time.Minute), Inputs: inputs}
}

// postStatus posts a batch and returns the status and body.
func postStatus(t *testing.T, c *client.ClientWithResponses, tn tenant, sensorID int64, batch ...client.ReadingInput) (int, []byte) {
	t.Helper()
	res, err := c.PostReadingsWithResponse(t.Context(), tn.orgID, tn.projectID, sensorID, nil, batch)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode(), res.Body
}

// A reading holds at most 100 inputs (-max-inputs): the 101st is a 400
// naming the limit, and nothing of the batch is stored.
func TestInputsPerReading(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])

	status, body := postStatus(t, c, tn, tn.sensorID, wideReading(0, 1, 1), wideReading(1, 1, 101))
	got := wantError(t, status, body, 400, "invalid")
	if !strings.Contains(got.Message, "element 1") || !strings.Contains(got.Message, "at most 100 inputs") {
		t.Errorf("message %q, want it to name element 1 and the limit of 100 inputs", got.Message)
	}
	if n := countReadings(t, e); n != 0 {
		t.Errorf("%d readings stored from a refused batch, want 0", n)
	}
	post(t, c, tn, wideReading(0, 1, 100))
}

// A sensor without a blueprint collects at most 100 distinct input ids
// over its life: a batch that would bring the 101st is refused whole,
// however its ids are spread over readings and batches; ids it has are
// always accepted; a sensor with a blueprint is bounded by its instance.
func TestInputsPerSensor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])

	post(t, c, tn, wideReading(0, 1, 60), wideReading(1, 41, 50)) // ids 1 to 90
	status, body := postStatus(t, c, tn, tn.sensorID, wideReading(2, 1, 10), wideReading(3, 81, 11), wideReading(4, 92, 10))
	got := wantError(t, status, body, 400, "invalid")
	if want := "the batch would give the sensor 101 distinct input ids; a sensor without a blueprint has at most 100 (it has 90)"; !strings.Contains(got.Message, want) {
		t.Errorf("message %q, want it to say %q", got.Message, want)
	}
	if n := countReadings(t, e); n != 2 {
		t.Errorf("%d readings stored, want the first batch's 2 only", n)
	}
	post(t, c, tn, wideReading(2, 81, 20)) // ids 81 to 100: 91 to 100 are new
	post(t, c, tn, wideReading(3, 1, 100))
	status, body = postStatus(t, c, tn, tn.sensorID, wideReading(4, 101, 1))
	wantError(t, status, body, 400, "invalid")

	// Deleting readings does not free their ids.
	if res, err := e.client(tn.tokens[store.Admin]).DeleteReadingsWithResponse(t.Context(), tn.orgID, tn.projectID, tn.sensorID, &client.DeleteReadingsParams{
		DatetimeGte: "2000-01-01T00:00:00Z", DatetimeLt: "2100-01-01T00:00:00Z",
	}); err != nil || res.StatusCode() != 200 {
		t.Fatalf("delete: %v %v", err, res.StatusCode())
	}
	status, body = postStatus(t, c, tn, tn.sensorID, wideReading(4, 101, 1))
	wantError(t, status, body, 400, "invalid")
}

// Batches that bring new input ids to one sensor at once all get in, none
// deadlocked (the set's row is taken by one at a time), and the limit
// holds across them.
func TestInputsPerSensorConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])

	const batches = 8 // of 20 new ids each: 5 fit
	statuses := make([]int, batches)
	var wg sync.WaitGroup
	for b := range batches {
		wg.Go(func() {
			statuses[b], _ = postStatus(t, c, tn, tn.sensorID, wideReading(b, int64(1+20*b), 20))
		})
	}
	wg.Wait()
	var ok, refused int
	for _, s := range statuses {
		switch s {
		case 200:
			ok++
		case 400:
			refused++
		default:
			t.Errorf("status %d, want 200 or 400", s)
		}
	}
	if ok != 5 || refused != 3 {
		t.Errorf("%d batches stored, %d refused; want 5 and 3", ok, refused)
	}
	var ids int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(DISTINCT u) FROM readings, unnest(input_ids) u`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if ids != 100 {
		t.Errorf("%d distinct input ids stored, want 100", ids)
	}
}

// An aggregates response lists at most 200,000 values (buckets × inputs
// and outputs × fns): beyond, a 400 names the limit before the response
// is built. The bound counts what is listed: empty buckets only with
// fill=null.
func TestAggregateValuesLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])

	batch := make([]client.ReadingInput, 700)
	for i := range batch {
		batch[i] = wideReading(i, 1, 100)
	}
	post(t, c, tn, batch...)
	path := func(minutes int, more string) string {
		return fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/aggregates?interval=1m&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=%s%s",
			tn.orgID, tn.projectID, tn.sensorID,
			time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(minutes)*time.Minute).Format(time.RFC3339), more)
	}
	for _, tc := range []struct {
		name   string
		path   string
		status int
	}{
		{"DenseUnder", path(600, ""), 200},                                                   // 600 × 100 × 3 = 180,000
		{"DenseOver", path(700, ""), 400},                                                    // 210,000
		{"DenseOverOneFn", path(700, "&fn=avg"), 200},                                        // 70,000
		{"AllFns", path(200, "&fn=avg,min,max,sum,count,first,last,median,range,rate"), 200}, // 200,000
		{"AllFnsOver", path(201, "&fn=avg,min,max,sum,count,first,last,median,range,rate"), 400},
		{"FillEmptyOver", path(9990, "&fill=null&fn=count"), 400}, // 999,000 nulls and counts
		{"SparseWithoutFill", path(9990, "&fn=count"), 200},       // 70,000
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := e.do(tn.tokens[store.Viewer], "GET", tc.path, "", nil)
			if tc.status != 200 {
				got := wantError(t, res.StatusCode, body, tc.status, "invalid")
				if !strings.Contains(got.Message, "more than 200000 values") {
					t.Errorf("message %q, want it to name the limit", got.Message)
				}
				return
			}
			if res.StatusCode != 200 {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			var buckets []bucketJSON
			if err := json.Unmarshal(body, &buckets); err != nil {
				t.Fatal(err)
			}
			for _, b := range buckets {
				if b.Count != 1 || len(b.Inputs) != 100 {
					t.Fatalf("bucket %s: count %d, %d inputs; want 1 and 100", b.Datetime, b.Count, len(b.Inputs))
				}
			}
		})
	}
}

// Any finite values can be stored and aggregated, every fn of them: no
// statistic overflows into an error. A statistic beyond float64 (a sum,
// range or rate) is null.
func TestAggregateExtremeValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	const maxF = math.MaxFloat64
	v := func(x float64) *float64 { return &x }
	negZero := math.Copysign(0, -1)
	cases := []struct {
		name   string
		values []float64 // one a second
		want   map[string]*float64
	}{
		{"SquaresOverflow", []float64{2, 1e200}, map[string]*float64{
			"avg": v(5e199), "min": v(2), "max": v(1e200), "sum": v(1e200), "count": v(2),
			"first": v(2), "last": v(1e200), "median": v(5e199), "range": v(1e200), "rate": v(1e200)}},
		{"Largest", []float64{maxF, maxF}, map[string]*float64{
			"avg": v(maxF), "min": v(maxF), "max": v(maxF), "sum": nil, "count": v(2),
			"first": v(maxF), "last": v(maxF), "median": v(maxF), "range": v(0), "rate": v(0)}},
		{"BothEnds", []float64{-maxF, maxF}, map[string]*float64{
			"avg": v(0), "min": v(-maxF), "max": v(maxF), "sum": v(0), "count": v(2),
			"first": v(-maxF), "last": v(maxF), "median": v(0), "range": nil, "rate": nil}},
		{"Smallest", []float64{5e-324, 5e-324, 5e-324}, map[string]*float64{
			"avg": v(5e-324), "min": v(5e-324), "max": v(5e-324), "sum": v(1.5e-323), "count": v(3),
			"first": v(5e-324), "last": v(5e-324), "median": v(5e-324), "range": v(0), "rate": v(0)}},
		{"NegativeZero", []float64{negZero}, map[string]*float64{
			"avg": v(negZero), "min": v(negZero), "max": v(negZero), "sum": v(negZero), "count": v(1),
			"first": v(negZero), "last": v(negZero), "median": v(negZero), "range": v(0), "rate": nil}},
		{"Mixed", []float64{1e308, 1, -1e308, 1e-300, 5e-324}, map[string]*float64{
			"avg": v(0.2), "min": v(-1e308), "max": v(1e308), "sum": v(1), "count": v(5),
			"first": v(1e308), "last": v(5e-324), "median": v(1e-300), "range": nil, "rate": v(-2.5e307)}},
		{"EvenMedianFarApart", []float64{-maxF, -1, 1, maxF}, map[string]*float64{
			"avg": v(0), "min": v(-maxF), "max": v(maxF), "sum": v(0), "count": v(4),
			"first": v(-maxF), "last": v(maxF), "median": v(0), "range": nil, "rate": nil}},
	}
	fns := "avg,min,max,sum,count,first,last,median,range,rate"
	for hour, tc := range cases {
		// A day each: days are summed by another path than hours.
		start := time.Date(2024, 5, 1+hour, 0, 0, 0, 0, time.UTC)
		batch := make([]client.ReadingInput, len(tc.values))
		for i, x := range tc.values {
			batch[i] = client.ReadingInput{Datetime: start.Add(time.Duration(i) * time.Second), Inputs: client.Values{"1": x}}
		}
		post(t, c, tn, batch...)
		// Days are summed from the rollups, or, as of an instant, in SQL
		// from the readings: each path by its own code.
		asOf := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
		for _, q := range []struct{ interval, fns, asOf string }{
			{"1h", fns, ""}, {"1d", fns, ""}, {"1d", "avg,min,max,sum,count", ""}, {"1d", "avg,min,max,sum,count", asOf},
		} {
			fns := q.fns
			t.Run(fmt.Sprintf("%s/%s/%s/%t", tc.name, q.interval, fns, q.asOf != ""), func(t *testing.T) {
				query := url.Values{"interval": {q.interval}, "fn": {fns},
					"datetime__gte": {start.Format(time.RFC3339)}, "datetime__lt": {start.Add(24 * time.Hour).Format(time.RFC3339)}}
				if q.asOf != "" {
					query.Set("as_of", q.asOf)
				}
				buckets := e.aggregates(t, tn.tokens[store.Viewer], tn, tn.sensorID, query)
				if len(buckets) != 1 {
					t.Fatalf("%d buckets, want 1", len(buckets))
				}
				got := buckets[0].Inputs["1"]
				for _, fn := range strings.Split(fns, ",") {
					g, w := got[fn], tc.want[fn]
					switch {
					case (g == nil) != (w == nil):
						t.Errorf("%s = %v, want %v", fn, deref(g), deref(w))
					case g != nil && (*g != *w && math.Abs(*g-*w) > 1e-12*math.Abs(*w) || math.Signbit(*g) != math.Signbit(*w)):
						t.Errorf("%s = %v, want %v", fn, *g, *w)
					}
				}
			})
		}
	}
	// The raw readings come back as posted.
	page, _ := list(t, c, tn, client.ListReadingsParams{})
	if got, want := page[0].Inputs["1"], 2.0; got != want {
		t.Errorf("first reading %v, want %v", got, want)
	}
}

// The widest data the limits allow, read by the heaviest reads at once:
// every answer is whole and right. (scripts/widest.sh runs the same against
// the real binary and measures its peak memory.)
func TestWidestDataConcurrentReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])

	const readings = 2000
	batch := make([]client.ReadingInput, readings)
	for i := range batch {
		batch[i] = wideReading(i, 1, 100)
	}
	var wg sync.WaitGroup
	for half := range 2 {
		wg.Go(func() { post(t, c, tn, batch[half*readings/2:(half+1)*readings/2]...) })
	}
	wg.Wait()

	base := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d", tn.orgID, tn.projectID, tn.sensorID)
	get := func(path, accept string) (int, []byte) {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Error(err)
		}
		return res.StatusCode, body
	}
	// 666 one-minute buckets × 100 inputs × 3 fns: just under the limit.
	aggregates := base + "/aggregates?interval=1m&fill=null&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-05-01T11:06:00Z"
	checks := []struct {
		name, path, accept string
		check              func(body []byte) error
	}{
		{"CSVPage", base + "?limit=1000", "text/csv", func(body []byte) error {
			lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
			if len(lines) != 1001 || strings.Count(lines[0], ",") != 100 || strings.Count(lines[1000], ",") != 100 {
				return fmt.Errorf("%d lines, header %.60q…; want 1001 lines of 101 columns", len(lines), lines[0])
			}
			return nil
		}},
		{"JSONPage", base + "?limit=1000&order=desc", "", func(body []byte) error {
			var page []client.Reading
			if err := json.Unmarshal(body, &page); err != nil {
				return err
			}
			if len(page) != 1000 || len(page[0].Inputs) != 100 || page[0].Inputs["100"] != 100+float64(readings-1)/7 {
				return fmt.Errorf("%d readings, the first with %d inputs; want 1000 of 100", len(page), len(page[0].Inputs))
			}
			return nil
		}},
		{"AggregatesFill", aggregates, "", func(body []byte) error {
			var buckets []bucketJSON
			if err := json.Unmarshal(body, &buckets); err != nil {
				return err
			}
			if len(buckets) != 666 || len(buckets[665].Inputs) != 100 || *buckets[665].Inputs["7"]["avg"] != 7+665.0/7 {
				return fmt.Errorf("%d buckets; want 666 of 100 inputs", len(buckets))
			}
			return nil
		}},
		{"ExportCSV", base + "/export?format=csv", "", func(body []byte) error {
			if lines := strings.Count(string(body), "\n"); lines != readings+1 {
				return fmt.Errorf("%d lines, want %d", lines, readings+1)
			}
			return nil
		}},
	}
	for range 3 {
		for _, ch := range checks {
			wg.Go(func() {
				status, body := get(ch.path, ch.accept)
				if status != 200 {
					t.Errorf("%s: status %d: %s", ch.name, status, truncate(body, 300))
					return
				}
				if err := ch.check(body); err != nil {
					t.Errorf("%s: %v", ch.name, err)
				}
			})
		}
	}
	wg.Wait()
}

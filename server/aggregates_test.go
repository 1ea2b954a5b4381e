package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// bucketJSON is a bucket as the test reads it, nulls kept apart from zeros.
type bucketJSON struct {
	Datetime string                         `json:"datetime"`
	Count    int64                          `json:"count"`
	Inputs   map[string]map[string]*float64 `json:"inputs"`
	Outputs  map[string]map[string]*float64 `json:"outputs"`
}

func (e *env) aggregates(t *testing.T, token string, tn tenant, sensorID int64, query url.Values) []bucketJSON {
	t.Helper()
	path := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/aggregates?%s", tn.orgID, tn.projectID, sensorID, query.Encode())
	res, body := e.do(token, "GET", path, "", nil)
	if res.StatusCode != 200 {
		t.Fatalf("aggregates %s: %d %s", query.Encode(), res.StatusCode, body)
	}
	var buckets []bucketJSON
	if err := json.Unmarshal(body, &buckets); err != nil {
		t.Fatalf("aggregates: %v in %s", err, body)
	}
	return buckets
}

// expected computes a bucket's functions from raw values in time order,
// the way the spec defines them.
func expected(times []time.Time, values []float64) map[string]*float64 {
	v := func(x float64) *float64 { return &x }
	sorted := slices.Sorted(slices.Values(values))
	n := len(values)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	sum := 0.0
	for _, x := range values {
		sum += x
	}
	out := map[string]*float64{
		"avg": v(sum / float64(n)), "min": v(sorted[0]), "max": v(sorted[n-1]), "sum": v(sum),
		"count": v(float64(n)), "first": v(values[0]), "last": v(values[n-1]), "median": v(median),
		"range": v(sorted[n-1] - sorted[0]), "rate": nil,
	}
	if seconds := times[n-1].Sub(times[0]).Seconds(); seconds > 0 {
		out["rate"] = v((values[n-1] - values[0]) / seconds)
	}
	return out
}

func sameFns(t *testing.T, what string, got, want map[string]*float64) {
	t.Helper()
	for fn, w := range want {
		g, ok := got[fn]
		switch {
		case !ok:
			t.Errorf("%s: %s missing", what, fn)
		case (g == nil) != (w == nil):
			t.Errorf("%s: %s = %v, want %v", what, fn, deref(g), w)
		case g != nil && math.Abs(*g-*w) > 1e-9*math.Max(1, math.Abs(*w)):
			t.Errorf("%s: %s = %v, want %v", what, fn, *g, *w)
		}
	}
}

const allFns = "avg,min,max,sum,count,first,last,median,range,rate"

// TestAggregatesDaylightSaving buckets readings every 30 minutes around
// the night the clocks went forward in London (31 March 2024) into local
// days, and checks every function against values computed here.
func TestAggregatesDaylightSaving(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}

	start := at(t, "2024-03-29T23:00:00Z")
	var batch []client.ReadingInput
	var times []time.Time
	for i := range 4 * 48 {
		when := start.Add(time.Duration(i) * 30 * time.Minute)
		inputs := client.Values{"1": math.Sin(float64(i)) * 100}
		if i%3 == 0 {
			inputs["2"] = float64(i)
		}
		batch = append(batch, client.ReadingInput{Datetime: when, Inputs: inputs})
		times = append(times, when)
	}
	post(t, c, tn, batch...)

	from, to := at(t, "2024-03-30T00:00:00Z"), at(t, "2024-04-02T00:00:00Z")
	buckets := e.aggregates(t, tn.tokens[store.Viewer], tn, tn.sensorID, url.Values{
		"interval": {"1d"}, "fn": {allFns}, "tz": {"Europe/London"},
		"datetime__gte": {from.Format(time.RFC3339)}, "datetime__lt": {to.Format(time.RFC3339)},
	})

	// Group by local calendar day, by hand.
	type group struct {
		times  map[string][]time.Time
		values map[string][]float64
		count  int64
	}
	groups := map[time.Time]*group{}
	var starts []time.Time
	for i, r := range batch {
		if r.Datetime.Before(from) || !r.Datetime.Before(to) {
			continue
		}
		local := r.Datetime.In(london)
		day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, london).UTC()
		g := groups[day]
		if g == nil {
			g = &group{times: map[string][]time.Time{}, values: map[string][]float64{}}
			groups[day] = g
			starts = append(starts, day)
		}
		g.count++
		for id, v := range r.Inputs {
			g.times[id] = append(g.times[id], times[i])
			g.values[id] = append(g.values[id], v)
		}
	}
	if len(buckets) != len(starts) {
		t.Fatalf("%d buckets, want %d (%v)", len(buckets), len(starts), starts)
	}
	for i, b := range buckets {
		want := starts[i].Format("2006-01-02T15:04:05.000Z")
		if b.Datetime != want {
			t.Errorf("bucket %d starts at %s, want local midnight %s", i, b.Datetime, want)
		}
		g := groups[starts[i]]
		if b.Count != g.count {
			t.Errorf("bucket %s: count %d, want %d", want, b.Count, g.count)
		}
		for id := range g.values {
			sameFns(t, fmt.Sprintf("bucket %s input %s", want, id), b.Inputs[id], expected(g.times[id], g.values[id]))
		}
	}
	// The day the clocks went forward has 23 hours: 46 readings, not 48.
	if spring := groups[at(t, "2024-03-31T00:00:00Z")]; spring == nil || spring.count != 46 {
		t.Errorf("31 March, local: %+v readings, want 46", spring)
	}
}

func TestAggregatesOutputsAndFill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	sensor, err := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	if err != nil {
		t.Fatal(err)
	}
	freq := strconv.FormatInt(sensor.Instance.Inputs[0].ID, 10)
	digits := strconv.FormatInt(sensor.Instance.Outputs[0].ID, 10)
	pressure := strconv.FormatInt(sensor.Instance.Outputs[1].ID, 10)
	piezo := tn
	piezo.sensorID = tn.instanceID

	// Hours 00 and 01 hold readings, hour 02 none, hour 03 one.
	var batch []client.ReadingInput
	for _, m := range []int{0, 20, 40, 60, 80, 100, 180} {
		batch = append(batch, client.ReadingInput{
			Datetime: at(t, "2024-05-01T00:00:00Z").Add(time.Duration(m) * time.Minute),
			Inputs:   client.Values{freq: 2000 + float64(m)},
		})
	}
	post(t, e.client(tn.tokens[store.Editor]), piezo, batch...)

	query := url.Values{
		"interval": {"1h"}, "fn": {"avg,max,count,rate"}, "outputs": {"true"}, "fill": {"null"},
		"datetime__gte": {"2024-05-01T00:00:00Z"}, "datetime__lt": {"2024-05-01T04:00:00Z"},
	}
	buckets := e.aggregates(t, tn.tokens[store.Viewer], tn, tn.instanceID, query)
	if len(buckets) != 4 {
		t.Fatalf("%d buckets with fill=null, want 4: %+v", len(buckets), buckets)
	}
	// digits = freq² / 1000; pressure = G (0.1) × (R0 (0) − digits).
	hour0 := []float64{2000, 2020, 2040}
	var d0 []float64
	for _, f := range hour0 {
		d0 = append(d0, f*f/1000)
	}
	sameFns(t, "hour 0 digits", buckets[0].Outputs[digits], map[string]*float64{
		"avg": ptr((d0[0] + d0[1] + d0[2]) / 3), "max": ptr(d0[2]), "count": ptr(3.0),
		"rate": ptr((d0[2] - d0[0]) / 2400),
	})
	sameFns(t, "hour 0 pressure", buckets[0].Outputs[pressure], map[string]*float64{"max": ptr(-0.1 * d0[0])})
	if b := buckets[2]; b.Count != 0 || b.Inputs[freq]["avg"] != nil || b.Outputs[digits]["avg"] != nil || *b.Outputs[digits]["count"] != 0 {
		t.Errorf("the empty hour = %+v; want count 0 and nulls", b)
	}
	if r := buckets[3].Outputs[digits]["rate"]; r != nil {
		t.Errorf("rate over one reading = %v, want null", *r)
	}

	// Without fill, the empty hour is left out.
	query.Del("fill")
	if got := e.aggregates(t, tn.tokens[store.Viewer], tn, tn.instanceID, query); len(got) != 3 {
		t.Errorf("%d buckets without fill, want 3", len(got))
	}
}

func TestAggregatesBadRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	base := url.Values{"interval": {"1h"}, "datetime__gte": {"2024-05-01T00:00:00Z"}, "datetime__lt": {"2024-05-02T00:00:00Z"}}
	with := func(key, value string) string {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		if value == "" {
			q.Del(key)
		} else {
			q.Set(key, value)
		}
		return q.Encode()
	}
	for _, tt := range []struct {
		name, query, want string
	}{
		{"TooManyBuckets", with("datetime__gte", "2000-01-01T00:00:00Z"), "10000"},
		{"IntervalTooShort", with("interval", "30s"), "interval"},
		{"IntervalTooLong", with("interval", "32d"), "1m to 31d"},
		{"IntervalZero", with("interval", "0h"), "interval"},
		{"NoInterval", with("interval", ""), "interval"},
		{"NoStart", with("datetime__gte", ""), "datetime__gte"},
		{"NoEnd", with("datetime__lt", ""), "datetime__lt"},
		{"Backwards", with("datetime__lt", "2024-04-01T00:00:00Z"), "after"},
		{"UnknownFn", with("fn", "avg,mode"), `"mode"`},
		{"BadTz", with("tz", "Mars/Olympus"), "time zone"},
		{"PosixTz", with("tz", "UTC+3"), "time zone"},
		{"LocalTz", with("tz", "Local"), "time zone"},
		{"BadFill", with("fill", "zero"), "fill"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, body := e.do(tn.tokens[store.Viewer], "GET",
				fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/aggregates?%s", tn.orgID, tn.projectID, tn.sensorID, tt.query), "", nil)
			got := wantError(t, res.StatusCode, body, 400, "invalid")
			if !strings.Contains(got.Message, tt.want) {
				t.Errorf("message %q should mention %s", got.Message, tt.want)
			}
		})
	}
}

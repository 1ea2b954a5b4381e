package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// rollupZones have offsets and changes of every kind: whole hours with
// changes in spring and autumn, none, half an hour and a quarter hour,
// a change of half an hour, and half an hour with changes.
var rollupZones = []string{"UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "Asia/Kathmandu", "America/St_Johns"}

// TestRollupsMatchReadings is the rollups' property test: over random
// readings, overwrites, deletes and edits of the formulas and
// calibrations, an aggregate answered from the rollups, before and after
// the maintainer has run, equals the one computed from the readings alone,
// whether the rollups were computed by the maintainer or merged with new
// readings as they were stored,
// in time zones whose clocks change by an hour, by half an hour, or never,
// and whose offsets are whole hours, half hours or quarter hours.
func TestRollupsMatchReadings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	raw := e.readingsOnly(t)

	tn := e.newTenant("Rollups")
	key := store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID}
	sensor, err := e.db.GetSensor(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	freq, temp := sensor.Instance.Inputs[0].ID, sensor.Instance.Inputs[1].ID
	rng := rand.New(rand.NewPCG(18, 2026))
	// Five weeks around the spring changes of New York (10 March),
	// Paris (31 March) and Lord Howe's autumn one (7 April).
	start := time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC)
	span := 35 * 24 * time.Hour
	at := func() time.Time {
		return start.Add(time.Duration(rng.Int64N(int64(span/time.Second))) * time.Second)
	}
	reading := func(t time.Time) store.Reading {
		r := store.Reading{Time: t}
		if rng.IntN(8) > 0 {
			r.InputIDs, r.Values = append(r.InputIDs, freq), append(r.Values, 500+rng.Float64()*2500)
		}
		if len(r.InputIDs) == 0 || rng.IntN(4) > 0 {
			r.InputIDs, r.Values = append(r.InputIDs, temp), append(r.Values, rng.NormFloat64()*10)
		}
		return r
	}
	var stored []time.Time
	write := func(n int) {
		batch := make([]store.Reading, n)
		for i := range batch {
			t := at()
			if len(stored) > 0 && rng.IntN(3) == 0 {
				t = stored[rng.IntN(len(stored))] // an overwrite
			}
			batch[i] = reading(t)
			stored = append(stored, t)
		}
		if rng.IntN(2) == 0 { // as a file streams in
			if rng.IntN(2) == 0 { // in time order: over stored readings, a chunk at a time
				slices.SortStableFunc(batch, func(a, b store.Reading) int { return a.Time.Compare(b.Time) })
			}
			if _, err := e.core.Ingest(ctx, key, &readingStream{readings: batch}); err != nil {
				t.Fatal(err)
			}
			return
		}
		if _, err := e.core.Ingest(ctx, key, sensing.NewBatch(batch)); err != nil {
			t.Fatal(err)
		}
	}
	edit := func() {
		s, err := e.db.GetSensor(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		inst := s.Instance.Clone()
		g := 0.05 + rng.Float64()
		switch rng.IntN(3) {
		case 0:
			inst.Constants[0].Value = &g
		case 1:
			inst.Constants[0].Calibrations = append(inst.Constants[0].Calibrations, store.Calibration{From: at().Truncate(time.Second), Value: g})
		default:
			inst.Outputs[0].Formula = fmt.Sprintf("freq^2 / %d", 500+rng.IntN(1000))
		}
		if _, err := e.core.EditInstance(ctx, key, func(i *store.Instance) error { *i = inst; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	uses := map[string]int{}
	compare := func(round string, wantUsed bool) {
		for i := range 12 {
			q := randomBucketQuery(rng, start, span)
			what := fmt.Sprintf("%s query %d %s", round, i, q.Encode())
			got, use := e.getBuckets(t, e.url, tn.tokens[store.Viewer], tn, q)
			want, _ := e.getBuckets(t, raw, tn.tokens[store.Viewer], tn, q)
			sameBuckets(t, what, got, want)
			uses[use]++
		}
		// An hour-aligned UTC range, after the maintainer, comes from rollups alone.
		q := url.Values{"datetime__gte": {start.Format(time.RFC3339)}, "datetime__lt": {start.Add(span).Format(time.RFC3339)},
			"interval": {"1d"}, "outputs": {"true"}, "fn": {"avg,min,max,sum,count,first,last,range,rate"}}
		got, use := e.getBuckets(t, e.url, tn.tokens[store.Viewer], tn, q)
		want, _ := e.getBuckets(t, raw, tn.tokens[store.Viewer], tn, q)
		sameBuckets(t, round+" whole range", got, want)
		if wantUsed && use != "used" {
			t.Errorf("%s: X-Rollups = %q over a clean range, want used", round, use)
		}
		// Days of a zone a quarter hour off UTC's hours: their whole hours
		// from the hours' rollups, the hours they start in from those of
		// the hours' quarters.
		q.Set("tz", "Asia/Kathmandu")
		got, use = e.getBuckets(t, e.url, tn.tokens[store.Viewer], tn, q)
		want, _ = e.getBuckets(t, raw, tn.tokens[store.Viewer], tn, q)
		sameBuckets(t, round+" whole range in Kathmandu", got, want)
		if wantUsed && use != "used" {
			t.Errorf("%s: X-Rollups = %q over a clean range in Kathmandu, want used", round, use)
		}
		// Inputs alone, in a zone a half hour off UTC's hours: where the
		// rollups do not serve, PostgreSQL aggregates the readings by
		// quarter.
		q.Set("tz", "Asia/Kolkata")
		q.Set("outputs", "false")
		q.Set("fn", "avg,min,max,sum,count,range")
		got, _ = e.getBuckets(t, e.url, tn.tokens[store.Viewer], tn, q)
		want, _ = e.getBuckets(t, raw, tn.tokens[store.Viewer], tn, q)
		sameBuckets(t, round+" whole range in Kolkata, inputs alone", got, want)
	}
	maintain := func() {
		for {
			n, err := e.core.RecomputeRollups(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				return
			}
		}
	}

	write(400)
	compare("before any rollup", false)
	maintain()
	compare("after the first rollups", true)
	for round := range 4 {
		write(40 + rng.IntN(100))
		if rng.IntN(2) == 0 {
			from := at()
			if _, err := e.core.DeleteReadings(ctx, key, from, from.Add(time.Duration(rng.IntN(30))*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(2) == 0 {
			edit()
		}
		compare(fmt.Sprintf("round %d, before the maintainer", round), false)
		maintain()
		compare(fmt.Sprintf("round %d, after the maintainer", round), true)
	}
	// A logger's batches, each after the sensor's newest reading, large
	// (a COPY) and small (upserted with the lock), are merged into their
	// hours' rollups as they are stored: a clean range comes from the
	// rollups alone before the maintainer has run, the hour of the newest
	// reading's rollup taking the next readings in, the next hours new.
	newest := start.Add(span - 6*time.Hour) // the last 6 hours emptied
	if _, err := e.core.DeleteReadings(ctx, key, newest, start.Add(span)); err != nil {
		t.Fatal(err)
	}
	maintain()
	for round, n := range []int{300, 7, 120, 1} {
		batch := make([]store.Reading, n)
		for i := range batch {
			newest = newest.Add(45*time.Second + time.Duration(rng.Int64N(int64(time.Second)))).Truncate(time.Microsecond)
			batch[i] = reading(newest)
			stored = append(stored, newest)
		}
		if _, err := e.core.Ingest(ctx, key, sensing.NewBatch(batch)); err != nil {
			t.Fatal(err)
		}
		compare(fmt.Sprintf("new readings %d, before the maintainer", round), true)
	}
	// Linked to another sensor, the outputs follow its readings, which no
	// rollup of this sensor's hours does: they are computed from the
	// readings, before and after the maintainer, and after the source's.
	sources, _ := linkedSensors(t, e, tn, "Source")
	sourceKey := store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: sources[0].sensorID}
	source, err := e.db.GetSensor(ctx, sourceKey)
	if err != nil {
		t.Fatal(err)
	}
	writeSource := func(n int) {
		batch := make([]store.Reading, n)
		for i := range batch {
			batch[i] = store.Reading{Time: at(), InputIDs: []int64{source.Instance.Inputs[0].ID}, Values: []float64{500 + rng.Float64()*2500}}
		}
		if _, err := e.core.Ingest(ctx, sourceKey, sensing.NewBatch(batch)); err != nil {
			t.Fatal(err)
		}
	}
	writeSource(300)
	if _, err := e.core.SetLinks(ctx, key, map[string]store.InputLink{"freq": {SensorID: source.ID, Key: "a", Staleness: 6 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	compare("linked, before the maintainer", false)
	maintain()
	compare("linked, after the maintainer", false)
	writeSource(100)
	compare("linked, after the source's new readings", false)
	// The random queries must have tried every source.
	for _, use := range []string{"used", "partial", "none"} {
		if uses[use] == 0 {
			t.Errorf("no query answered with X-Rollups: %s, of %v", use, uses)
		}
	}
}

// randomBucketQuery is an aggregates query over part of [start, start+span):
// its bounds on the hour or not, in a zone of rollupZones, of an interval
// of whole hours or not, with outputs or, without first and last values,
// of inputs alone.
func randomBucketQuery(rng *rand.Rand, start time.Time, span time.Duration) url.Values {
	from := start.Add(time.Duration(rng.Int64N(int64(span))))
	to := from.Add(time.Duration(rng.Int64N(int64(span))))
	if rng.IntN(3) > 0 {
		from, to = from.Truncate(time.Hour), to.Truncate(time.Hour).Add(time.Hour)
	}
	intervals := []string{"1h", "2h", "3h", "6h", "1d", "1d", "2d", "7d", "30m", "90m"}
	q := url.Values{
		"datetime__gte": {from.Format(time.RFC3339Nano)},
		"datetime__lt":  {to.Format(time.RFC3339Nano)},
		"interval":      {intervals[rng.IntN(len(intervals))]},
		"tz":            {rollupZones[rng.IntN(len(rollupZones))]},
		"outputs":       {"true"},
		"fn":            {"avg,min,max,sum,count,first,last,range,rate"},
	}
	if rng.IntN(3) == 0 {
		q.Set("fill", "null")
	}
	if rng.IntN(2) == 0 { // without first and last, which cost more
		q.Set("fn", "avg,min,max,sum,count,range")
		if rng.IntN(2) == 0 { // inputs alone: what PostgreSQL aggregates
			q.Set("outputs", "false")
		}
	}
	return q
}

// getBuckets asks the server at base for the instance sensor's
// aggregates, and returns them with the X-Rollups header.
func (e *env) getBuckets(t *testing.T, base, token string, tn tenant, q url.Values) ([]bucketJSON, string) {
	t.Helper()
	path := fmt.Sprintf("%s/api/v1/org/%d/proj/%d/readings/%d/aggregates?%s", base, tn.orgID, tn.projectID, tn.instanceID, q.Encode())
	req, err := http.NewRequestWithContext(t.Context(), "GET", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := e.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("aggregates %s: %d %s %v", q.Encode(), res.StatusCode, body, err)
	}
	var buckets []bucketJSON
	if err := json.Unmarshal(body, &buckets); err != nil {
		t.Fatalf("aggregates: %v in %s", err, body)
	}
	return buckets, res.Header.Get("X-Rollups")
}

// sameBuckets compares two answers, floats to a relative 1e-9: sums added
// in another order may differ in their last bits.
func sameBuckets(t *testing.T, what string, got, want []bucketJSON) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d buckets, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Datetime != w.Datetime || g.Count != w.Count {
			t.Fatalf("%s: bucket %d is %s with %d readings, want %s with %d", what, i, g.Datetime, g.Count, w.Datetime, w.Count)
		}
		for _, side := range []struct {
			name      string
			got, want map[string]map[string]*float64
		}{{"input", g.Inputs, w.Inputs}, {"output", g.Outputs, w.Outputs}} {
			if len(side.got) != len(side.want) {
				t.Fatalf("%s: bucket %s lists %d %ss, want %d", what, g.Datetime, len(side.got), side.name, len(side.want))
			}
			for k, wantFns := range side.want {
				for fn, wv := range wantFns {
					gv := side.got[k][fn]
					switch {
					case (gv == nil) != (wv == nil):
						t.Fatalf("%s: bucket %s %s %s %s = %v, want %v", what, g.Datetime, side.name, k, fn, deref(gv), deref(wv))
					case gv != nil && math.Abs(*gv-*wv) > 1e-9*math.Max(1, math.Abs(*wv)):
						t.Fatalf("%s: bucket %s %s %s %s = %v, want %v", what, g.Datetime, side.name, k, fn, *gv, *wv)
					}
				}
			}
		}
	}
}

// readingStream yields readings as a file does, one at a time.
type readingStream struct {
	readings []store.Reading
	next     int
}

func (s *readingStream) Where() (string, map[string]any) {
	return fmt.Sprintf("reading %d", s.next-1), nil
}

func (s *readingStream) Next() (*store.Reading, error) {
	if s.next == len(s.readings) {
		return nil, nil
	}
	s.next++
	return &s.readings[s.next-1], nil
}

// TestMergedRollupsAreExact: an hour's rollup that a batch of new readings
// takes in as it is stored holds the very sums the readings give, bit for
// bit: 0.1, then 0.2 and 0.3 in a later batch, sum to 0.6000000000000001
// added one by one, and to 0.6 were the later batch summed apart first.
func TestMergedRollupsAreExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	raw := e.readingsOnly(t)
	tn := e.newTenant("Exact")
	sensor, err := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	if err != nil {
		t.Fatal(err)
	}
	input := sensor.Instance.Inputs[0].ID
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	c := e.client(tn.tokens[store.Editor])
	for _, batch := range [][]float64{{0.1}, {0.2, 0.3}} {
		var readings []client.ReadingInput
		for _, v := range batch {
			readings = append(readings, client.ReadingInput{Datetime: start, Inputs: map[string]float64{strconv.FormatInt(input, 10): v}})
			start = start.Add(time.Second)
		}
		res, err := c.PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, nil, readings)
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("post: %v %s", err, res.Body)
		}
	}
	q := url.Values{"datetime__gte": {"2024-05-01T00:00:00Z"}, "datetime__lt": {"2024-05-01T01:00:00Z"}, "interval": {"1h"}, "fn": {"sum,avg"}}
	got, use := e.getBuckets(t, e.url, tn.tokens[store.Viewer], tn, q)
	want, _ := e.getBuckets(t, raw, tn.tokens[store.Viewer], tn, q)
	if use != "used" {
		t.Fatalf("X-Rollups = %q, want used: the batches' hour merged as they were stored", use)
	}
	key := strconv.FormatInt(input, 10)
	if len(got) != 1 || len(want) != 1 {
		t.Fatalf("%d and %d buckets, want one each", len(got), len(want))
	}
	for _, fn := range []string{"sum", "avg"} {
		g, w := got[0].Inputs[key][fn], want[0].Inputs[key][fn]
		if g == nil || w == nil || *g != *w {
			t.Errorf("%s from the rollups %v, from the readings %v: want the same bits", fn, deref(g), deref(w))
		}
	}
	if s := want[0].Inputs[key]["sum"]; s == nil || *s != 0.6000000000000001 {
		t.Errorf("the readings' sum is %v, want 0.6000000000000001", deref(s))
	}
}

// A batch that replaces every reading its hours held (a logger's batch sent
// again) gives those hours their rollups itself, as a batch of new readings
// does: the maintainer has nothing to read back, and the rollups answer at
// once, to the bit what the readings answer. A batch that leaves one of an
// hour's readings, or lands in an hour already queued, queues its hours.
func TestReplacedHoursRolledUpByTheBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	raw := e.readingsOnly(t)
	tn := e.newTenant("Replaced")
	sensor, err := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	if err != nil {
		t.Fatal(err)
	}
	input := strconv.FormatInt(sensor.Instance.Inputs[0].ID, 10)
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	c := e.client(tn.tokens[store.Editor])
	post := func(offsets []time.Duration, value float64) {
		t.Helper()
		var readings []client.ReadingInput
		for i, d := range offsets {
			readings = append(readings, client.ReadingInput{Datetime: start.Add(d), Inputs: map[string]float64{input: value + float64(i)/10}})
		}
		res, err := c.PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, nil, readings)
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("post: %v %s", err, res.Body)
		}
	}
	queued := func() (hours []time.Time) {
		t.Helper()
		rows, _ := e.pool.Query(ctx, `SELECT hour FROM rollup_dirty WHERE sensor_id = $1 ORDER BY hour`, tn.instanceID)
		hours, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
		if err != nil {
			t.Fatal(err)
		}
		return hours
	}
	sameAsReadings := func(what string) {
		t.Helper()
		q := url.Values{"datetime__gte": {"2024-05-01T00:00:00Z"}, "datetime__lt": {"2024-05-01T03:00:00Z"}, "interval": {"1h"},
			"fn": {"avg,min,max,sum,count,first,last"}}
		got, use := e.getBuckets(t, e.url, tn.tokens[store.Viewer], tn, q)
		want, _ := e.getBuckets(t, raw, tn.tokens[store.Viewer], tn, q)
		if use != "used" {
			t.Errorf("%s: X-Rollups = %q, want used: the batch's hours rolled up with it", what, use)
		}
		sameBuckets(t, what, got, want)
	}
	m := time.Minute
	post([]time.Duration{0, m, 2 * m, 61 * m, 62 * m}, 1) // new: two hours
	if q := queued(); len(q) != 0 {
		t.Fatalf("queued %v after new readings, want none", q)
	}
	// The same instants, other values, and one more in the first hour.
	post([]time.Duration{0, m, 2 * m, 3 * m, 61 * m, 62 * m}, 5)
	if q := queued(); len(q) != 0 {
		t.Errorf("queued %v after a batch replaced every reading of its hours, want none", q)
	}
	sameAsReadings("every reading replaced")
	// One of the second hour's two readings replaced: that hour is read
	// back by the maintainer.
	post([]time.Duration{61 * m}, 9)
	if q, want := queued(), []time.Time{start.Add(time.Hour)}; !slices.EqualFunc(q, want, time.Time.Equal) {
		t.Errorf("queued %v after a batch replaced part of an hour, want %v", q, want)
	}
	// Now both hours whole, but one of them queued: its rollup does not
	// say how many readings it holds, so both are queued.
	post([]time.Duration{0, m, 2 * m, 3 * m, 61 * m, 62 * m}, 7)
	if q, want := queued(), []time.Time{start, start.Add(time.Hour)}; !slices.EqualFunc(q, want, time.Time.Equal) {
		t.Errorf("queued %v after a batch over a queued hour, want %v", q, want)
	}
	if _, err := e.core.RecomputeRollups(ctx); err != nil {
		t.Fatal(err)
	}
	sameAsReadings("after the maintainer")
}

// readingsOnly serves the same service on e's database, answering
// aggregates from the readings alone: what an answer from the rollups
// must equal. It returns the server's URL.
func (e *env) readingsOnly(t *testing.T) string {
	cfg := defaultConfig()
	cfg.core.ReadingsOnly = true
	return serve(t, newService(t, e.db, slog.New(slog.DiscardHandler), cfg, faults{}).srv).URL
}

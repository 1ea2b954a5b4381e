package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// linkedSensors creates, in the tenant's project, sensors of a blueprint
// whose output out is a − b, and returns them with their ids by key.
func linkedSensors(t *testing.T, e *env, tn tenant, names ...string) ([]tenant, []map[string]string) {
	t.Helper()
	admin := e.client(tn.tokens[store.Admin])
	bp, err := admin.CreateBlueprintWithResponse(t.Context(), tn.orgID, client.BlueprintWrite{
		Name:    "Difference",
		Inputs:  []client.BlueprintInput{{Key: "a", Name: "A"}, {Key: "b", Name: "B"}},
		Outputs: []client.BlueprintOutput{{Key: "out", Name: "A less B", Formula: "a - b"}},
	})
	if err != nil || bp.StatusCode() != 201 {
		t.Fatalf("create blueprint: %v %s", err, bp.Body)
	}
	sensors := make([]tenant, len(names))
	keys := make([]map[string]string, len(names))
	for i, name := range names {
		res, err := admin.CreateSensorWithResponse(t.Context(), tn.orgID, tn.projectID, client.SensorCreate{Name: name, BlueprintId: &bp.JSON201.Id})
		if err != nil || res.StatusCode() != 201 {
			t.Fatalf("create sensor: %v %s", err, res.Body)
		}
		sensors[i] = tn
		sensors[i].sensorID = res.JSON201.Id
		keys[i] = ids(*res.JSON201)
	}
	return sensors, keys
}

// setLinks puts links on sensor and returns the response.
func setLinks(t *testing.T, e *env, sensor tenant, links client.LinksUpdate) *client.UpdateLinksResponse {
	t.Helper()
	res, err := e.client(sensor.tokens[store.Admin]).UpdateLinksWithResponse(t.Context(), sensor.orgID, sensor.projectID, sensor.sensorID, links)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLinks corrects a piezometer (P) by a barometer (B) whose own
// reading is corrected by a thermometer (T): P.b is B's out, B.b is T's a.
// Every read that computes outputs takes the source's value as of each
// reading, within the link's staleness.
func TestLinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	s, k := linkedSensors(t, e, tn, "T", "B", "P")
	thermo, baro, piezo := s[0], s[1], s[2]
	editor := e.client(tn.tokens[store.Editor])

	if res := setLinks(t, e, baro, client.LinksUpdate{"b": {SensorId: thermo.sensorID, Key: "a"}}); res.StatusCode() != 200 {
		t.Fatalf("link B: %d %s", res.StatusCode(), res.Body)
	}
	res := setLinks(t, e, piezo, client.LinksUpdate{"b": {SensorId: baro.sensorID, Key: "out", Staleness: ptr(60)}})
	if res.StatusCode() != 200 {
		t.Fatalf("link P: %d %s", res.StatusCode(), res.Body)
	}
	if l := res.JSON200.Inputs[1].Link; l == nil || l.SensorId != baro.sensorID || l.Key != "out" || deref(l.Staleness) != 60 {
		t.Errorf("P's input b shows link %+v, want B's out within 60 s", l)
	}
	if l := res.JSON200.Inputs[0].Link; l != nil {
		t.Errorf("P's input a shows link %+v, want none: its own reading", l)
	}
	got, err := e.client(tn.tokens[store.Viewer]).GetSensorWithResponse(t.Context(), tn.orgID, tn.projectID, baro.sensorID)
	if err != nil || got.JSON200.Inputs[1].Link == nil || deref(got.JSON200.Inputs[1].Link.Staleness) != 3600 {
		t.Errorf("B as read: %v %s; want input b linked to T within the default hour", err, got.Body)
	}

	// B reads a = 100 at noon, so its out is 98.
	// T reads 2 at 11:00, then at 11:30 only its b: 2 still serves B.
	post(t, editor, thermo,
		reading(t, "2024-05-01T11:00:00Z", client.Values{k[0]["a"]: 2}),
		reading(t, "2024-05-01T11:30:00Z", client.Values{k[0]["b"]: 5}))
	post(t, editor, baro, reading(t, "2024-05-01T12:00:00Z", client.Values{k[1]["a"]: 100}))
	post(t, editor, piezo,
		reading(t, "2024-05-01T11:59:59.999999Z", client.Values{k[2]["a"]: 150}),
		// The link wins over a value of b the reading carries.
		reading(t, "2024-05-01T12:00:30Z", client.Values{k[2]["a"]: 150, k[2]["b"]: 7}),
		reading(t, "2024-05-01T12:01:00Z", client.Values{k[2]["a"]: 160}),
		reading(t, "2024-05-01T12:01:00.000001Z", client.Values{k[2]["a"]: 170}),
	)
	// out of each of P's readings; "" where it has none.
	want := []string{"", "52", "62", ""}

	t.Run("Page", func(t *testing.T) {
		for _, order := range []client.ListReadingsParamsOrder{client.Asc, client.Desc} {
			page, _ := list(t, editor, piezo, client.ListReadingsParams{Outputs: ptr(true), Order: &order})
			for i, r := range page {
				j := i
				if order == client.Desc {
					j = len(page) - 1 - i
				}
				v, ok := (*r.Outputs)[k[2]["out"]]
				if got := fmt.Sprint(v); !ok && want[j] != "" || ok && got != want[j] {
					t.Errorf("order %s, reading %s: out = %v (%v), want %q", order, r.Datetime, v, ok, want[j])
				}
			}
		}
	})
	wantCSV := "datetime,a,b,out\n" +
		"2024-05-01T11:59:59.999Z,150,,\n" +
		"2024-05-01T12:00:30.000Z,150,7,52\n" +
		"2024-05-01T12:01:00.000Z,160,,62\n" +
		"2024-05-01T12:01:00.000Z,170,,\n"
	t.Run("CSVPage", func(t *testing.T) {
		body := e.getText(t, tn, "text/csv", fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d?outputs=true&keys=names", tn.orgID, tn.projectID, piezo.sensorID))
		if body != wantCSV {
			t.Errorf("CSV page:\n%s\nwant\n%s", body, wantCSV)
		}
	})
	t.Run("Export", func(t *testing.T) {
		body := e.getText(t, tn, "", fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/export?outputs=true&keys=names", tn.orgID, tn.projectID, piezo.sensorID))
		if body != wantCSV {
			t.Errorf("CSV export:\n%s\nwant\n%s", body, wantCSV)
		}
	})
	t.Run("ProjectReadings", func(t *testing.T) {
		body := e.getText(t, tn, "", fmt.Sprintf("/api/v1/org/%d/proj/%d/readings?sensors=%d&outputs=true&keys=names&key=out", tn.orgID, tn.projectID, piezo.sensorID))
		if !strings.Contains(body, `"value":52}`) || !strings.Contains(body, `"value":62}`) || strings.Count(body, `"key":"out"`) != 2 {
			t.Errorf("project readings: %s; want out 52 and 62 alone", body)
		}
	})
	t.Run("Aggregates", func(t *testing.T) {
		buckets := e.aggregates(t, tn.tokens[store.Viewer], tn, piezo.sensorID, url.Values{
			"interval": {"1h"}, "fn": {"min,max,count"}, "outputs": {"true"},
			"datetime__gte": {"2024-05-01T11:00:00Z"}, "datetime__lt": {"2024-05-01T13:00:00Z"},
		})
		if len(buckets) != 2 {
			t.Fatalf("%d buckets, want 2: %+v", len(buckets), buckets)
		}
		noon := buckets[1].Outputs[k[2]["out"]]
		if deref(noon["min"]) != 52 || deref(noon["max"]) != 62 || deref(noon["count"]) != 2 {
			t.Errorf("noon's out = min %v max %v count %v, want 52, 62, 2", deref(noon["min"]), deref(noon["max"]), deref(noon["count"]))
		}
		if c := buckets[0].Outputs[k[2]["out"]]["count"]; c != nil && *c != 0 {
			t.Errorf("11 o'clock's out count = %v, want 0", *c)
		}
	})
	t.Run("Latest", func(t *testing.T) {
		// P's latest reading is a microsecond past B's bound: no out.
		body := e.getText(t, tn, "", fmt.Sprintf("/api/v1/org/%d/proj/%d/latest?outputs=true&keys=names", tn.orgID, tn.projectID))
		if !strings.Contains(body, `"inputs":{"a":170},"outputs":{}`) {
			t.Errorf("latest: %s; want P's newest without out", body)
		}
		// B's latest is computed with T's value: 100 − 2.
		if !strings.Contains(body, `"inputs":{"a":100},"outputs":{"out":98}`) {
			t.Errorf("latest: %s; want B's out 98 through its link to T", body)
		}
	})
	t.Run("ErrCycle", func(t *testing.T) {
		res := setLinks(t, e, thermo, client.LinksUpdate{"b": {SensorId: piezo.sensorID, Key: "out"}})
		body := wantError(t, res.StatusCode(), res.Body, 400, "invalid")
		for _, id := range []int64{thermo.sensorID, baro.sensorID, piezo.sensorID} {
			if !strings.Contains(body.Message, fmt.Sprint(id)) {
				t.Errorf("cycle message %q does not name sensor %d", body.Message, id)
			}
		}
	})
	t.Run("ErrDeleteSource", func(t *testing.T) {
		res, err := e.client(tn.tokens[store.Admin]).DeleteSensorWithResponse(t.Context(), tn.orgID, tn.projectID, baro.sensorID)
		if err != nil {
			t.Fatal(err)
		}
		body := wantError(t, res.StatusCode(), res.Body, 409, "conflict")
		if !strings.Contains(body.Message, fmt.Sprintf("%d (P)", piezo.sensorID)) {
			t.Errorf("message %q does not list P", body.Message)
		}
	})
	t.Run("ErrAnotherOrganization", func(t *testing.T) {
		other := e.newTenant("Globex")
		res := setLinks(t, e, piezo, client.LinksUpdate{"b": {SensorId: other.instanceID, Key: "digits"}})
		wantError(t, res.StatusCode(), res.Body, 404, "not_found")
	})
	t.Run("ErrAnotherProject", func(t *testing.T) {
		project, err := e.db.CreateProject(t.Context(), tn.orgID, "second", "")
		if err != nil {
			t.Fatal(err)
		}
		elsewhere := tn
		elsewhere.projectID = project.ID
		s, _ := linkedSensors(t, e, elsewhere, "Q")
		res := setLinks(t, e, piezo, client.LinksUpdate{"b": {SensorId: s[0].sensorID, Key: "out"}})
		wantError(t, res.StatusCode(), res.Body, 404, "not_found")
	})
	t.Run("Removed", func(t *testing.T) {
		// Without its link, P's b is its own reading's again.
		if res := setLinks(t, e, piezo, client.LinksUpdate{}); res.StatusCode() != 200 {
			t.Fatalf("remove links: %d %s", res.StatusCode(), res.Body)
		}
		page, _ := list(t, editor, piezo, client.ListReadingsParams{Outputs: ptr(true)})
		if out := *page[1].Outputs; len(out) != 1 || out[k[2]["out"]] != 143 || len(*page[2].Outputs) != 0 {
			t.Errorf("outputs without the link: %v, %v; want out 143 from the reading's own b, then none", out, *page[2].Outputs)
		}
	})
}

// getText GETs path as the tenant's viewer, accepting accept, and returns
// the body of a 200.
func (e *env) getText(t *testing.T, tn tenant, accept, path string) string {
	t.Helper()
	req, err := http.NewRequest("GET", e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := e.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s %v", path, res.StatusCode, body, err)
	}
	return string(body)
}

// TestLinksAlarms evaluates a rule on a linked output: at ingest, with the
// source's readings stored by then; again when the link changes.
func TestLinksAlarms(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	s, k := linkedSensors(t, e, tn, "B", "C", "P")
	baro, other, piezo := s[0], s[1], s[2]
	editor := e.client(tn.tokens[store.Editor])
	linkTo(t, e, piezo, baro, "a")
	outAlarm(t, e, piezo, "above", 50)

	// P's reading comes before any of B's: out is missing, no alarm; B's
	// reading of 11:30, arriving after, does not re-evaluate it.
	post(t, editor, piezo, reading(t, "2024-05-01T12:00:00Z", client.Values{k[2]["a"]: 100}))
	post(t, editor, baro, reading(t, "2024-05-01T11:30:00Z", client.Values{k[0]["a"]: 10}))
	if n := activeAlarms(t, e, tn); n != 0 {
		t.Fatalf("%d alarms after B's late reading, want none", n)
	}
	// The next reading of P finds B's: out = 90.
	post(t, editor, piezo, reading(t, "2024-05-01T12:10:00Z", client.Values{k[2]["a"]: 100}))
	if n := activeAlarms(t, e, tn); n != 1 {
		t.Fatalf("%d alarms with out at 90, want 1", n)
	}
	// Linked to C, whose a is 80, P's newest out is 20: the edit clears it.
	post(t, editor, other, reading(t, "2024-05-01T12:05:00Z", client.Values{k[1]["a"]: 80}))
	linkTo(t, e, piezo, other, "a")
	if n := activeAlarms(t, e, tn); n != 0 {
		t.Errorf("%d alarms once out is 20, want none", n)
	}
}

// TestLinksAggregateLimit reads a source over an aggregate's range, which
// streams: beyond the limit on its values, a 400 names the source.
func TestLinksAggregateLimit(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.core.MaxLinkValues = 2
	e := newEnvWith(t, cfg, faults{})
	tn := e.newTenant("Acme")
	s, k := linkedSensors(t, e, tn, "B", "P")
	baro, piezo := s[0], s[1]
	if res := setLinks(t, e, piezo, client.LinksUpdate{"b": {SensorId: baro.sensorID, Key: "a"}}); res.StatusCode() != 200 {
		t.Fatalf("link P: %d %s", res.StatusCode(), res.Body)
	}
	editor := e.client(tn.tokens[store.Editor])
	post(t, editor, baro,
		reading(t, "2024-05-01T12:00:00Z", client.Values{k[0]["a"]: 1}),
		reading(t, "2024-05-01T12:10:00Z", client.Values{k[0]["a"]: 2}),
		reading(t, "2024-05-01T12:20:00Z", client.Values{k[0]["a"]: 3}))
	post(t, editor, piezo, reading(t, "2024-05-01T12:25:00Z", client.Values{k[1]["a"]: 10}))
	path := func(to string) string {
		return fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/aggregates?interval=1h&fn=max&outputs=true&keys=names&datetime__gte=%s&datetime__lt=%s",
			tn.orgID, tn.projectID, piezo.sensorID, url.QueryEscape("2024-05-01T12:00:00Z"), url.QueryEscape(to))
	}
	res, body := e.do(tn.tokens[store.Viewer], "GET", path("2024-05-01T13:00:00Z"), "", nil)
	got := wantError(t, res.StatusCode, body, 400, "invalid")
	if !strings.Contains(got.Message, fmt.Sprintf("sensor %d (B)", baro.sensorID)) {
		t.Errorf("message %q does not name the source", got.Message)
	}
	// The page of the same readings holds one value per reading.
	page, _ := list(t, editor, piezo, client.ListReadingsParams{Outputs: ptr(true)})
	if out := (*page[0].Outputs)[k[1]["out"]]; out != 7 {
		t.Errorf("out = %v, want 10 − 3", out)
	}
}

// linkTo links the dependant's input b to the source's value key, and
// fails the test unless it is done.
func linkTo(t *testing.T, e *env, dependant, source tenant, key string) {
	t.Helper()
	if res := setLinks(t, e, dependant, client.LinksUpdate{"b": {SensorId: source.sensorID, Key: key}}); res.StatusCode() != 200 {
		t.Fatalf("link sensor %d to %d's %s: %d %s", dependant.sensorID, source.sensorID, key, res.StatusCode(), res.Body)
	}
}

// outAlarm puts on the sensor a rule raising Alarm when its out is past
// threshold in direction.
func outAlarm(t *testing.T, e *env, sensor tenant, direction client.AlarmRuleInputDirection, threshold float64) {
	t.Helper()
	rule, err := e.client(sensor.tokens[store.Admin]).CreateAlarmRuleWithResponse(t.Context(), sensor.orgID, sensor.projectID, sensor.sensorID,
		client.AlarmRuleInput{Target: "out", Level: "Alarm", Direction: direction, Threshold: threshold})
	if err != nil || rule.JSON201 == nil {
		t.Fatalf("create rule: %v %s", err, rule.Body)
	}
}

// activeAlarms counts the project's alarms in force.
func activeAlarms(t *testing.T, e *env, tn tenant) int {
	t.Helper()
	res, err := e.client(tn.tokens[store.Viewer]).ListAlarmsWithResponse(t.Context(), tn.orgID, tn.projectID, nil)
	if err != nil || res.JSON200 == nil {
		t.Fatalf("list alarms: %v %s", err, res.Body)
	}
	return len(res.JSON200.Items)
}

// TestLinksFollowSourceFlags: a value rejected at a link's source is left
// out of the dependant's outputs in every read, as a read of the source
// leaves it out: its page (read before the flag, so that the page's hints
// say it is linked), CSV export, aggregates (from the readings, and with
// the hours' rollups built), latest values and alarm state, at once; the
// link takes the latest value not rejected, within its staleness. An
// output of a reading whose input is rejected is missing, not an older
// one. Clearing the flag brings it all back, and a read as of before the
// flag gives the answer given then, byte for byte.
func TestLinksFollowSourceFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	s, k := linkedSensors(t, e, tn, "B", "P", "Q")
	baro, piezo, outQ := s[0], s[1], s[2]
	editor := e.client(tn.tokens[store.Editor])
	viewer := e.client(tn.tokens[store.Viewer])
	ctx := t.Context()
	// P's b is B's input a; Q's b is B's out, a − b.
	linkTo(t, e, piezo, baro, "a")
	linkTo(t, e, outQ, baro, "out")
	post(t, editor, baro,
		reading(t, "2024-05-01T12:00:00Z", client.Values{k[0]["a"]: 10, k[0]["b"]: 0}),
		reading(t, "2024-05-01T12:10:00Z", client.Values{k[0]["a"]: 20, k[0]["b"]: 0}))
	// P's out below 85 is an alarm: 100 − 20 at 12:15 raises it.
	outAlarm(t, e, piezo, "below", 85)
	for i, sensor := range []tenant{piezo, outQ} {
		post(t, editor, sensor,
			reading(t, "2024-05-01T12:05:00Z", client.Values{k[i+1]["a"]: 100}),
			reading(t, "2024-05-01T12:15:00Z", client.Values{k[i+1]["a"]: 100}))
	}

	outs := func(t *testing.T, sensor tenant, key map[string]string) string {
		t.Helper()
		page, _ := list(t, viewer, sensor, client.ListReadingsParams{Outputs: ptr(true)})
		var got []string
		for _, r := range page {
			v, ok := (*r.Outputs)[key["out"]]
			got = append(got, map[bool]string{true: fmt.Sprint(v), false: "-"}[ok])
		}
		return strings.Join(got, " ")
	}
	hour := client.AggregateReadingsParams{DatetimeGte: "2024-05-01T12:00:00Z", DatetimeLt: "2024-05-01T13:00:00Z", Interval: ptr("1h"), Fn: ptr("min,max"), Outputs: ptr(true)}
	aggregate := func(t *testing.T) (string, string) {
		t.Helper()
		res, err := viewer.AggregateReadingsWithResponse(ctx, tn.orgID, tn.projectID, piezo.sensorID, &hour)
		if err != nil || res.JSON200 == nil || len(*res.JSON200) != 1 || (*res.JSON200)[0].Outputs == nil {
			t.Fatalf("aggregate: %v %s", err, res.Body)
		}
		out := (*(*res.JSON200)[0].Outputs)[k[1]["out"]]
		return fmt.Sprintf("%v..%v", deref(out["min"]), deref(out["max"])), res.HTTPResponse.Header.Get("X-Rollups")
	}
	latest := func(t *testing.T) string {
		t.Helper()
		res, err := viewer.LatestReadingsWithResponse(ctx, tn.orgID, tn.projectID, &client.LatestReadingsParams{Outputs: ptr(true), Keys: ptr(client.LatestReadingsParamsKeys("names"))})
		if err != nil || res.JSON200 == nil {
			t.Fatalf("latest: %v %s", err, res.Body)
		}
		var got []string
		for _, l := range res.JSON200.Items {
			if l.SensorId != baro.sensorID && l.Reading != nil && l.Reading.Outputs != nil {
				v, ok := (*l.Reading.Outputs)["out"]
				got = append(got, map[bool]string{true: fmt.Sprint(v), false: "-"}[ok])
			}
		}
		return strings.Join(got, " ")
	}
	flag := func(t *testing.T, input *string) {
		t.Helper()
		res, err := editor.SetFlagWithResponse(ctx, tn.orgID, tn.projectID, baro.sensorID,
			client.FlagInput{Flag: client.FlagInputFlagRejected, From: "2024-05-01T12:10:00Z", Input: input, Reason: "Spike"})
		if err != nil || res.JSON201 == nil {
			t.Fatalf("set flag: %v %s", err, res.Body)
		}
	}
	clear := func(t *testing.T) {
		t.Helper()
		res, err := editor.ClearFlagsWithResponse(ctx, tn.orgID, tn.projectID, baro.sensorID,
			client.FlagClearInput{From: "2024-05-01T12:00:00Z", To: ptr("2024-05-01T13:00:00Z"), Reason: "Reviewed"})
		if err != nil || res.JSON200 == nil || len(res.JSON200.Flags) != 1 {
			t.Fatalf("clear flags: %v %s", err, res.Body)
		}
	}
	csvPath := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/export?outputs=true&keys=names", tn.orgID, tn.projectID, piezo.sensorID)
	pagePath := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d?outputs=true", tn.orgID, tn.projectID, piezo.sensorID)
	aggPath := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/aggregates?outputs=true&interval=1h&fn=min,max&datetime__gte=2024-05-01T12:00:00Z&datetime__lt=2024-05-01T13:00:00Z", tn.orgID, tn.projectID, piezo.sensorID)

	// Read twice: the second page is read with its links, as the hints
	// say it has them.
	for range 2 {
		if got, want := outs(t, piezo, k[1])+" / "+outs(t, outQ, k[2]), "90 80 / 90 80"; got != want {
			t.Fatalf("outs before the flag: %s, want %s", got, want)
		}
	}
	if got, _ := aggregate(t); got != "80..90" {
		t.Fatalf("aggregate before the flag: %s, want 80..90", got)
	}
	if n := activeAlarms(t, e, tn); n != 1 {
		t.Fatalf("%d alarms before the flag, want 1", n)
	}
	then := []string{e.getText(t, tn, "", pagePath), e.getText(t, tn, "", aggPath), e.getText(t, tn, "", csvPath)}
	time.Sleep(2 * time.Millisecond) // the instant lies strictly between the reads and the flag, to the millisecond
	asOf := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	time.Sleep(2 * time.Millisecond)

	// B's reading of 12:10 rejected whole: P and Q take 12:00's, 10.
	flag(t, nil)
	t.Run("RejectedWhole", func(t *testing.T) {
		if got, want := outs(t, piezo, k[1])+" / "+outs(t, outQ, k[2]), "90 90 / 90 90"; got != want {
			t.Errorf("outs: %s, want %s", got, want)
		}
		wantCSV := "datetime,a,b,out\n2024-05-01T12:05:00.000Z,100,,90\n2024-05-01T12:15:00.000Z,100,,90\n"
		if got := e.getText(t, tn, "", csvPath); got != wantCSV {
			t.Errorf("CSV export:\n%s\nwant\n%s", got, wantCSV)
		}
		if got, use := aggregate(t); got != "90..90" {
			t.Errorf("aggregate from the readings (X-Rollups %s): %s, want 90..90", use, got)
		}
		if _, err := e.core.RecomputeRollups(ctx); err != nil {
			t.Fatal(err)
		}
		if got, use := aggregate(t); got != "90..90" || use == "none" {
			t.Errorf("aggregate with the rollups built: %s, X-Rollups %s; want 90..90, the rollups used for the inputs", got, use)
		}
		if got := latest(t); got != "90 90" {
			t.Errorf("latest outs of P and Q: %s, want 90 90", got)
		}
		if n := activeAlarms(t, e, tn); n != 0 {
			t.Errorf("%d alarms once B's reading is rejected, want none: P's alarm is rechecked at once", n)
		}
		for i, path := range []string{pagePath, aggPath, csvPath} {
			if got := e.getText(t, tn, "", path+"&as_of="+asOf); got != then[i] {
				t.Errorf("as of before the flag:\n got %s\nwant %s", got, then[i])
			}
		}
	})
	clear(t)
	t.Run("Cleared", func(t *testing.T) {
		if got, want := outs(t, piezo, k[1])+" / "+outs(t, outQ, k[2]), "90 80 / 90 80"; got != want {
			t.Errorf("outs: %s, want %s", got, want)
		}
		if got, _ := aggregate(t); got != "80..90" {
			t.Errorf("aggregate: %s, want 80..90", got)
		}
		if got := latest(t); got != "80 80" {
			t.Errorf("latest outs of P and Q: %s, want 80 80", got)
		}
		if n := activeAlarms(t, e, tn); n != 1 {
			t.Errorf("%d alarms once the flag is cleared, want 1", n)
		}
	})
	// B's input a rejected at 12:10: P takes 12:00's a; Q's B out at
	// 12:10 cannot be computed, so Q's out is missing, not 12:00's.
	flag(t, ptr("a"))
	t.Run("RejectedInput", func(t *testing.T) {
		if got, want := outs(t, piezo, k[1])+" / "+outs(t, outQ, k[2]), "90 90 / 90 -"; got != want {
			t.Errorf("outs: %s, want %s", got, want)
		}
		if got := latest(t); got != "90 -" {
			t.Errorf("latest outs of P and Q: %s, want 90 and none", got)
		}
		if n := activeAlarms(t, e, tn); n != 0 {
			t.Errorf("%d alarms once B's a is rejected, want none", n)
		}
	})
}

// TestLinksChainFlagRechecks: a flag on the first sensor of a chain of
// links rechecks the alarms at its end at once: P takes B's out, which
// takes T's a.
func TestLinksChainFlagRechecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	s, k := linkedSensors(t, e, tn, "T", "B", "P")
	thermo, baro, piezo := s[0], s[1], s[2]
	editor := e.client(tn.tokens[store.Editor])
	ctx := t.Context()
	linkTo(t, e, baro, thermo, "a")
	linkTo(t, e, piezo, baro, "out")
	outAlarm(t, e, piezo, "above", 70)
	// P's out is 100 − (50 − 30) = 80 at 12:15: an alarm; without T's
	// 12:10 reading, 100 − (50 − 0) = 50.
	post(t, editor, thermo,
		reading(t, "2024-05-01T12:00:00Z", client.Values{k[0]["a"]: 0}),
		reading(t, "2024-05-01T12:10:00Z", client.Values{k[0]["a"]: 30}))
	post(t, editor, baro, reading(t, "2024-05-01T12:12:00Z", client.Values{k[1]["a"]: 50}))
	post(t, editor, piezo, reading(t, "2024-05-01T12:15:00Z", client.Values{k[2]["a"]: 100}))
	if n := activeAlarms(t, e, tn); n != 1 {
		t.Fatalf("%d alarms with P's out at 80, want 1", n)
	}
	res, err := editor.SetFlagWithResponse(ctx, tn.orgID, tn.projectID, thermo.sensorID,
		client.FlagInput{Flag: client.FlagInputFlagRejected, From: "2024-05-01T12:10:00Z", Reason: "Spike"})
	if err != nil || res.JSON201 == nil {
		t.Fatalf("set flag: %v %s", err, res.Body)
	}
	if n := activeAlarms(t, e, tn); n != 0 {
		t.Errorf("%d alarms once T's reading is rejected, want none: P, two links away, is rechecked at once", n)
	}
}

// TestLinksAsOfSourceConfiguration: a read as of an instant reads a
// link's source with the source's configuration in force then, along the
// chain, so that a report is given again number for number after the
// sources' formulas, constants and calibrations were edited. P takes B's
// out, which takes T's out (a chain, read after the page); Q takes T's out
// (read with the page). out is K·a − b.
func TestLinksAsOfSourceConfiguration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	admin := e.client(tn.tokens[store.Admin])
	editor := e.client(tn.tokens[store.Editor])
	viewer := e.client(tn.tokens[store.Viewer])
	ctx := t.Context()
	bp, err := admin.CreateBlueprintWithResponse(ctx, tn.orgID, client.BlueprintWrite{
		Name:      "Scaled difference",
		Inputs:    []client.BlueprintInput{{Key: "a", Name: "A"}, {Key: "b", Name: "B"}},
		Constants: &[]client.BlueprintConstant{{Key: "K", Name: "Scale", Default: ptr(1.0)}},
		Outputs:   []client.BlueprintOutput{{Key: "out", Name: "K·A less B", Formula: "K * a - b"}},
	})
	if err != nil || bp.JSON201 == nil {
		t.Fatalf("create blueprint: %v %s", err, bp.Body)
	}
	var s [4]tenant
	var k [4]map[string]string
	for i, name := range []string{"T", "B", "P", "Q"} {
		res, err := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: name, BlueprintId: &bp.JSON201.Id})
		if err != nil || res.JSON201 == nil {
			t.Fatalf("create sensor: %v %s", err, res.Body)
		}
		s[i], k[i] = tn, ids(*res.JSON201)
		s[i].sensorID = res.JSON201.Id
	}
	thermo, baro, piezo, outQ := s[0], s[1], s[2], s[3]
	linkTo(t, e, baro, thermo, "out")
	linkTo(t, e, piezo, baro, "out")
	linkTo(t, e, outQ, thermo, "out")
	post(t, editor, thermo,
		reading(t, "2024-05-01T12:00:00Z", client.Values{k[0]["a"]: 5, k[0]["b"]: 0}),
		reading(t, "2024-05-01T12:10:00Z", client.Values{k[0]["a"]: 7, k[0]["b"]: 0}))
	post(t, editor, baro, reading(t, "2024-05-01T12:01:00Z", client.Values{k[1]["a"]: 20}))
	for i, sensor := range []tenant{piezo, outQ} {
		post(t, editor, sensor,
			reading(t, "2024-05-01T12:05:00Z", client.Values{k[i+2]["a"]: 100}),
			reading(t, "2024-05-01T12:15:00Z", client.Values{k[i+2]["a"]: 100}))
	}

	outs := func(t *testing.T) string {
		t.Helper()
		var got []string
		for i, sensor := range []tenant{piezo, outQ} {
			page, _ := list(t, viewer, sensor, client.ListReadingsParams{Outputs: ptr(true)})
			for _, r := range page {
				v, ok := (*r.Outputs)[k[i+2]["out"]]
				got = append(got, map[bool]string{true: fmt.Sprint(v), false: "-"}[ok])
			}
		}
		return strings.Join(got, " ")
	}
	var paths []string
	for _, sensor := range []tenant{piezo, outQ} {
		base := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d", tn.orgID, tn.projectID, sensor.sensorID)
		paths = append(paths, base+"?outputs=true", base+"/export?outputs=true&keys=names",
			base+"/aggregates?outputs=true&interval=1h&fn=min,max,avg&datetime__gte=2024-05-01T12:00:00Z&datetime__lt=2024-05-01T13:00:00Z")
	}
	read := func(t *testing.T, query string) []string {
		t.Helper()
		got := make([]string, len(paths))
		for i, path := range paths {
			got[i] = e.getText(t, tn, "", path+query)
		}
		return got
	}

	// B's out is 20 − 5 = 15 at 12:01; P's 100 − 15 = 85; Q's 100 − 5,
	// then 100 − 7.
	if got, want := outs(t), "85 85 95 93"; got != want {
		t.Fatalf("outs before the edits: %s, want %s", got, want)
	}
	then := read(t, "")
	time.Sleep(2 * time.Millisecond) // the instant lies strictly between the reads and the edits, to the millisecond
	asOf := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	time.Sleep(2 * time.Millisecond)

	// T's out becomes 3·a − b + 1; B's K is calibrated to 2.
	f, err := admin.UpdateFormulasWithResponse(ctx, tn.orgID, tn.projectID, thermo.sensorID, client.FormulasUpdate{
		Outputs: &map[string]string{"out": "K * a - b + 1"}, Constants: &map[string]*float64{"K": ptr(3.0)},
	})
	if err != nil || f.StatusCode() != 200 {
		t.Fatalf("update formulas: %v %s", err, f.Body)
	}
	c, err := admin.UpdateCalibrationsWithResponse(ctx, tn.orgID, tn.projectID, baro.sensorID, client.CalibrationsUpdate{
		"K": {{From: "2024-01-01T00:00:00Z", Value: 2}},
	})
	if err != nil || c.StatusCode() != 200 {
		t.Fatalf("update calibrations: %v %s", err, c.Body)
	}

	// T's out is 16 at 12:00, 22 at 12:10; B's 2·20 − 16 = 24.
	if got, want := outs(t), "76 76 84 78"; got != want {
		t.Errorf("outs after the edits: %s, want %s", got, want)
	}
	now := read(t, "")
	for i, got := range read(t, "&as_of="+asOf) {
		if now[i] == then[i] {
			t.Errorf("GET %s: the same after the edits as before them:\n%s", paths[i], now[i])
		}
		if got != then[i] {
			t.Errorf("GET %s&as_of=%s:\n got %s\nwant %s", paths[i], asOf, got, then[i])
		}
	}
}

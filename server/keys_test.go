package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// TestKeysNames reads a piezometer's readings with keys=names from every
// read operation: its values are named by the blueprint's keys, CSV headers
// carry the units, and a sensor without a blueprint keeps its ids.
func TestKeysNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := t.Context()
	editor, viewer := e.client(tn.tokens[store.Editor]), e.client(tn.tokens[store.Viewer])
	sensor, err := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	if err != nil {
		t.Fatal(err)
	}
	freq, temp := fmt.Sprint(sensor.Instance.Inputs[0].ID), fmt.Sprint(sensor.Instance.Inputs[1].ID)
	piezo := tn
	piezo.sensorID = tn.instanceID
	post(t, editor, piezo, reading(t, "2024-05-01T12:00:00Z", client.Values{freq: 3000, temp: 20}))
	post(t, editor, tn, reading(t, "2024-05-01T12:00:00Z", client.Values{"7": 1}))
	names, ids := ptr(client.ListReadingsParamsKeysNames), ptr(client.ListReadingsParamsKeysIds)
	csv := func(_ context.Context, req *http.Request) error { req.Header.Set("Accept", "text/csv"); return nil }

	t.Run("Page", func(t *testing.T) {
		res, err := viewer.ListReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, &client.ListReadingsParams{Keys: names, Outputs: ptr(true)})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("list: %v %s", err, res.Body)
		}
		r := (*res.JSON200)[0]
		if got, want := fmt.Sprint(r.Inputs, *r.Outputs), "map[freq:3000 temp:20] map[digits:9000 pressure:-900]"; got != want {
			t.Errorf("inputs and outputs = %s, want %s", got, want)
		}
		res, _ = viewer.ListReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, &client.ListReadingsParams{Keys: ids})
		if r := (*res.JSON200)[0]; r.Inputs[freq] != 3000 {
			t.Errorf("keys=ids: inputs = %v, want keyed by id", r.Inputs)
		}
	})
	t.Run("PageCSV", func(t *testing.T) {
		res, err := viewer.ListReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, &client.ListReadingsParams{Keys: names, Outputs: ptr(true)}, csv)
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("list: %v %s", err, res.Body)
		}
		want := "datetime,freq (Hz),temp (degC),digits (digit),pressure (kPa)\n2024-05-01T12:00:00.000Z,3000,20,9000,-900\n"
		if got := string(res.Body); got != want {
			t.Errorf("CSV page = %q, want %q", got, want)
		}
	})
	t.Run("NoBlueprint", func(t *testing.T) {
		res, _ := viewer.ListReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, &client.ListReadingsParams{Keys: names}, csv)
		if got, want := string(res.Body), "datetime,7\n2024-05-01T12:00:00.000Z,1\n"; got != want {
			t.Errorf("CSV page of a sensor without a blueprint = %q, want %q", got, want)
		}
	})
	t.Run("Export", func(t *testing.T) {
		// NDJSON lines are readingEncoder.append's, which Page tests; the
		// validating transport cannot decode NDJSON.
		res, err := viewer.ExportReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID,
			&client.ExportReadingsParams{Keys: ptr(client.ExportReadingsParamsKeysNames), Outputs: ptr(true)})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("export: %v %s", err, res.Body)
		}
		want := "datetime,freq (Hz),temp (degC),digits (digit),pressure (kPa)\n2024-05-01T12:00:00.000Z,3000,20,9000,-900\n"
		if got := string(res.Body); got != want {
			t.Errorf("export = %q, want %q", got, want)
		}
	})
	t.Run("Aggregates", func(t *testing.T) {
		res, err := viewer.AggregateReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, &client.AggregateReadingsParams{
			Interval: ptr("1h"), Fn: ptr("max"), DatetimeGte: "1714564800000", DatetimeLt: "2024-05-01T13:00:00Z",
			Fill: ptr(client.Null), Outputs: ptr(true), Keys: ptr(client.AggregateReadingsParamsKeysNames)})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("aggregates: %v %s", err, res.Body)
		}
		want := `[{"datetime":"2024-05-01T12:00:00.000Z","count":1,"inputs":{"freq":{"max":3000},"temp":{"max":20}},` +
			`"outputs":{"digits":{"max":9000},"pressure":{"max":-900}}}]` + "\n"
		if got := string(res.Body); got != want {
			t.Errorf("aggregates = %s, want %s", got, want)
		}
	})
	t.Run("Latest", func(t *testing.T) {
		res, err := viewer.LatestReadingsWithResponse(ctx, tn.orgID, tn.projectID, &client.LatestReadingsParams{
			Keys: ptr(client.LatestReadingsParamsKeysNames), Outputs: ptr(true)})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("latest: %v %s", err, res.Body)
		}
		got := map[string]string{}
		for _, l := range res.JSON200.Items {
			got[l.SensorName] = fmt.Sprint(l.Reading.Inputs, *l.Reading.Outputs)
		}
		want := map[string]string{"Acme sensor": "map[7:1] map[]", "Acme piezometer": "map[freq:3000 temp:20] map[digits:9000 pressure:-900]"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("latest by sensor name = %v, want %v", got, want)
		}
	})
}

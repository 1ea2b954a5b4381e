package server_test

import (
	"testing"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// TestBaselines is a vibrating-wire piezometer zeroed on a stored reading,
// then re-zeroed by entered values: outputs on both sides of the change
// follow their own baseline, computed on read.
func TestBaselines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := t.Context()
	admin := e.client(tn.tokens[store.Admin])

	bp := piezometerWrite()
	bp.Outputs = []client.BlueprintOutput{
		{Key: "pressure", Name: "Pressure", Unit: ptr("kPa"), Formula: "G * (freq0^2 - freq^2) / 1000"},
		{Key: "dt", Name: "Temperature change", Unit: ptr("degC"), Formula: "temp - temp0"},
	}
	created, err := admin.CreateBlueprintWithResponse(ctx, tn.orgID, bp)
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create blueprint: %v %s", err, created.Body)
	}
	res, err := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: "PZ-01", BlueprintId: &created.JSON201.Id})
	if err != nil || res.StatusCode() != 201 {
		t.Fatalf("create sensor: %v %s", err, res.Body)
	}
	pz := tn
	pz.sensorID = res.JSON201.Id
	id := ids(*res.JSON201)
	post(t, e.client(tn.tokens[store.Editor]), pz,
		reading(t, "2024-05-01T00:00:00Z", client.Values{id["freq"]: 2900, id["temp"]: 10}),
		reading(t, "2024-06-01T00:00:00Z", client.Values{id["freq"]: 2850, id["temp"]: 12}),
		reading(t, "2024-07-01T00:00:00Z", client.Values{id["freq"]: 2800, id["temp"]: 13}),
	)
	outputs := func(t *testing.T) []client.Values {
		t.Helper()
		got, _ := list(t, admin, pz, client.ListReadingsParams{Outputs: ptr(true)})
		out := make([]client.Values, len(got))
		for i, r := range got {
			out[i] = *r.Outputs
		}
		return out
	}
	check := func(t *testing.T, want []map[string]float64) {
		t.Helper()
		got := outputs(t)
		for i := range want {
			if len(got[i]) != len(want[i]) {
				t.Errorf("reading %d outputs %v, want %v", i, got[i], want[i])
				continue
			}
			for key, v := range want[i] {
				if !near(got[i][id[key]], v) {
					t.Errorf("reading %d %s = %v, want %v", i, key, got[i][id[key]], v)
				}
			}
		}
	}
	set := func(t *testing.T, baselines client.BaselinesUpdate) *client.UpdateBaselinesResponse {
		t.Helper()
		res, err := admin.UpdateBaselinesWithResponse(ctx, tn.orgID, tn.projectID, pz.sensorID, baselines)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	t.Run("NoBaselineNoOutputs", func(t *testing.T) {
		check(t, []map[string]float64{{}, {}, {}})
	})

	t.Run("ZeroReadingThenRezero", func(t *testing.T) {
		res := set(t, client.BaselinesUpdate{
			{Reading: ptr(client.Datetime("2024-05-01T02:00:00+02:00"))},
			{From: ptr(client.Datetime("2024-06-15T00:00:00Z")), Values: &map[string]float64{"freq": 2880}},
		})
		if res.StatusCode() != 200 {
			t.Fatalf("baselines: %d %s", res.StatusCode(), res.Body)
		}
		b := *res.JSON200.Baselines
		if got := b["freq"]; len(got) != 2 || got[0].From != "2024-05-01T00:00:00.000Z" || got[0].Value != 2900 || got[1].Value != 2880 {
			t.Errorf("freq's baselines %v, want 2900 from the May reading, then 2880", got)
		}
		if got := b["temp"]; len(got) != 1 || got[0].Value != 10 {
			t.Errorf("temp's baselines %v, want 10 from the May reading only", got)
		}
		// By hand, pressure = 0.1 × (freq0² − freq²) / 1000:
		// May: freq0 2900, 0. June: 0.1 × (2900² − 2850²) / 1000 = 28.75.
		// July, after the re-zero: 0.1 × (2880² − 2800²) / 1000 = 45.44.
		// temp0 stays 10 throughout.
		check(t, []map[string]float64{
			{"pressure": 0, "dt": 0},
			{"pressure": 28.75, "dt": 2},
			{"pressure": 45.44, "dt": 3},
		})
		page, _ := admin.GetSensorWithResponse(ctx, tn.orgID, tn.projectID, pz.sensorID)
		if page.JSON200.Baselines == nil || len((*page.JSON200.Baselines)["freq"]) != 2 {
			t.Errorf("the sensor page shows baselines %v, want freq's two", page.JSON200.Baselines)
		}
	})

	t.Run("Refused", func(t *testing.T) {
		for _, tt := range []struct {
			name      string
			baselines client.BaselinesUpdate
		}{
			{"NeitherValuesNorReading", client.BaselinesUpdate{{From: ptr(client.Datetime("2024-05-01T00:00:00Z"))}}},
			{"BothValuesAndReading", client.BaselinesUpdate{{Reading: ptr(client.Datetime("2024-05-01T00:00:00Z")), Values: &map[string]float64{"freq": 1}}}},
			{"ValuesWithoutFrom", client.BaselinesUpdate{{Values: &map[string]float64{"freq": 1}}}},
			{"NoReadingThere", client.BaselinesUpdate{{Reading: ptr(client.Datetime("2024-05-01T00:00:00.000001Z"))}}},
			{"NotAnInput", client.BaselinesUpdate{{From: ptr(client.Datetime("2024-05-01T00:00:00Z")), Values: &map[string]float64{"G": 1}}}},
			{"TwoFromOneInstant", client.BaselinesUpdate{
				{Reading: ptr(client.Datetime("2024-05-01T00:00:00Z"))},
				{From: ptr(client.Datetime("2024-05-01T00:00:00Z")), Values: &map[string]float64{"freq": 1}},
			}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				if res := set(t, tt.baselines); res.StatusCode() != 400 {
					t.Errorf("status %d, want 400: %s", res.StatusCode(), res.Body)
				}
			})
		}
		check(t, []map[string]float64{
			{"pressure": 0, "dt": 0},
			{"pressure": 28.75, "dt": 2},
			{"pressure": 45.44, "dt": 3},
		})
	})

	t.Run("WithoutBlueprint", func(t *testing.T) {
		plain, err := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: "plain"})
		if err != nil || plain.StatusCode() != 201 {
			t.Fatalf("create sensor: %v %s", err, plain.Body)
		}
		got, err := admin.UpdateBaselinesWithResponse(ctx, tn.orgID, tn.projectID, plain.JSON201.Id, client.BaselinesUpdate{})
		if err != nil || got.StatusCode() != 409 {
			t.Errorf("baselines of a sensor without a blueprint: %v %d, want 409", err, got.StatusCode())
		}
	})

	t.Run("EmptyListRemovesThem", func(t *testing.T) {
		if res := set(t, client.BaselinesUpdate{}); res.StatusCode() != 200 || res.JSON200.Baselines != nil {
			t.Fatalf("baselines []: %d %s", res.StatusCode(), res.Body)
		}
		check(t, []map[string]float64{{}, {}, {}})
	})
}

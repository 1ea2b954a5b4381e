package server_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// piezometerWrite is the README's worked example, as an integrator posts it.
func piezometerWrite() client.BlueprintWrite {
	return client.BlueprintWrite{
		Name: "Vibrating-wire piezometer",
		Inputs: []client.BlueprintInput{
			{Key: "freq", Name: "Frequency", Unit: ptr("Hz")},
			{Key: "temp", Name: "Temperature", Unit: ptr("degC")},
		},
		Constants: &[]client.BlueprintConstant{
			{Key: "G", Name: "Gauge factor", Unit: ptr("kPa/digit"), Default: ptr(0.1)},
			{Key: "R0", Name: "Zero reading", Unit: ptr("digit"), Default: ptr(0.0)},
		},
		Outputs: []client.BlueprintOutput{
			{Key: "digits", Name: "Digits", Unit: ptr("digit"), Formula: "freq^2 / 1000"},
			{Key: "pressure", Name: "Pressure", Unit: ptr("kPa"), Formula: "G * (R0 - digits)"},
		},
	}
}

// ids returns an instance's input and output ids by key.
func ids(s client.Sensor) map[string]string {
	m := map[string]string{}
	for _, in := range s.Inputs {
		m[in.Key] = strconv.FormatInt(in.Id, 10)
	}
	for _, o := range s.Outputs {
		m[o.Key] = strconv.FormatInt(o.Id, 10)
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// TestPiezometer is the "done when": a blueprint, two sensors with
// distinct ids, readings posted with those ids, a dated calibration, and
// outputs read back with values computed here by hand.
func TestPiezometer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	admin := e.client(tn.tokens[store.Admin])

	created, err := admin.CreateBlueprintWithResponse(ctx, tn.orgID, piezometerWrite())
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create blueprint: %v %s", err, created.Body)
	}
	bp := created.JSON201.Id

	newSensor := func(name string, constants client.ConstantValues) client.Sensor {
		res, err := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: name, BlueprintId: &bp, Constants: &constants})
		if err != nil || res.StatusCode() != 201 {
			t.Fatalf("create sensor: %v %s", err, res.Body)
		}
		return *res.JSON201
	}
	a := newSensor("PZ-A", client.ConstantValues{"G": 0.12, "R0": 9000})
	b := newSensor("PZ-B", client.ConstantValues{"R0": 8000})

	t.Run("DistinctIDs", func(t *testing.T) {
		seen := map[string]bool{}
		for _, s := range []client.Sensor{a, b} {
			if len(s.Inputs) != 2 || len(s.Outputs) != 2 || *s.BlueprintId != bp {
				t.Fatalf("sensor %+v, want the blueprint's 2 inputs and 2 outputs", s)
			}
			for _, id := range ids(s) {
				if seen[id] {
					t.Errorf("id %s appears twice across two instances", id)
				}
				seen[id] = true
			}
		}
		page, _ := admin.GetSensorWithResponse(ctx, tn.orgID, tn.projectID, a.Id)
		if page.StatusCode() != 200 || fmt.Sprint(ids(*page.JSON200)) != fmt.Sprint(ids(a)) {
			t.Errorf("the sensor page shows ids %v, want %v", ids(*page.JSON200), ids(a))
		}
		if got := page.JSON200.Constants; got["G"] != 0.12 || got["R0"] != 9000 {
			t.Errorf("constants in force %v, want G 0.12 and R0 9000", got)
		}
		if got := b.Constants; got["G"] != 0.1 || got["R0"] != 8000 {
			t.Errorf("sensor B's constants %v, want the default G 0.1 and R0 8000", got)
		}
	})

	ia, ib := ids(a), ids(b)
	sensorA := tn
	sensorA.sensorID = a.Id
	editor := e.client(tn.tokens[store.Editor])
	post(t, editor, sensorA,
		reading(t, "2024-05-01T00:00:00Z", client.Values{ia["freq"]: 2800, ia["temp"]: 11}),
		reading(t, "2024-06-01T00:00:00Z", client.Values{ia["freq"]: 2700}),
		reading(t, "2024-07-01T00:00:00Z", client.Values{ia["temp"]: 12}), // no frequency: no outputs
	)

	outputs := func() []client.Values {
		t.Helper()
		got, _ := list(t, editor, sensorA, client.ListReadingsParams{Outputs: ptr(true)})
		out := make([]client.Values, len(got))
		for i, r := range got {
			if r.Outputs == nil {
				t.Fatalf("reading %d has no outputs object with outputs=true", i)
			}
			out[i] = *r.Outputs
		}
		return out
	}
	// By hand: digits = freq² / 1000; pressure = G × (R0 − digits).
	// 2800 Hz: digits 7840, pressure 0.12 × (9000 − 7840) = 139.2.
	// 2700 Hz: digits 7290, pressure 0.12 × (9000 − 7290) = 205.2.
	check := func(name string, got []client.Values, want []map[string]float64) {
		t.Helper()
		for i := range want {
			if len(got[i]) != len(want[i]) {
				t.Errorf("%s: reading %d outputs %v, want %v", name, i, got[i], want[i])
				continue
			}
			for key, v := range want[i] {
				if !near(got[i][ia[key]], v) {
					t.Errorf("%s: reading %d %s = %v, want %v", name, i, key, got[i][ia[key]], v)
				}
			}
		}
	}
	check("Defaults", outputs(), []map[string]float64{
		{"digits": 7840, "pressure": 139.2},
		{"digits": 7290, "pressure": 205.2},
		{},
	})

	t.Run("NoOutputsWithoutTheParameter", func(t *testing.T) {
		got, _ := list(t, editor, sensorA, client.ListReadingsParams{})
		if got[0].Outputs != nil {
			t.Errorf("outputs %v without outputs=true", got[0].Outputs)
		}
	})

	t.Run("DatedCalibration", func(t *testing.T) {
		res, err := admin.UpdateCalibrationsWithResponse(ctx, tn.orgID, tn.projectID, a.Id, client.CalibrationsUpdate{
			"G": {{From: "2024-06-01T00:00:00Z", Value: 0.125}},
		})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("calibrations: %v %s", err, res.Body)
		}
		if got := res.JSON200.Calibrations["G"]; len(got) != 1 || got[0].Value != 0.125 {
			t.Errorf("calibrations %v, want G from June on", res.JSON200.Calibrations)
		}
		// Only from June 1st: 0.125 × (9000 − 7290) = 213.75.
		check("Calibrated", outputs(), []map[string]float64{
			{"digits": 7840, "pressure": 139.2},
			{"digits": 7290, "pressure": 213.75},
			{},
		})
	})

	t.Run("EditedFormulaChangesHistory", func(t *testing.T) {
		res, err := admin.UpdateFormulasWithResponse(ctx, tn.orgID, tn.projectID, a.Id, client.FormulasUpdate{
			Outputs:   &map[string]string{"pressure": "G * (R0 - digits) - 2.5"},
			Constants: &map[string]*float64{"G": ptr(0.2)},
		})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("formulas: %v %s", err, res.Body)
		}
		if fmt.Sprint(ids(*res.JSON200)) != fmt.Sprint(ia) {
			t.Errorf("ids after the edit %v, want them kept: %v", ids(*res.JSON200), ia)
		}
		// May: G is now 0.2: 0.2 × 1160 − 2.5 = 229.5. June: still 0.125
		// from the calibration: 0.125 × 1710 − 2.5 = 211.25.
		check("Edited", outputs(), []map[string]float64{
			{"digits": 7840, "pressure": 229.5},
			{"digits": 7290, "pressure": 211.25},
			{},
		})
	})

	t.Run("NullRestoresTheDefault", func(t *testing.T) {
		res, err := admin.UpdateFormulasWithResponse(ctx, tn.orgID, tn.projectID, b.Id, client.FormulasUpdate{
			Constants: &map[string]*float64{"R0": nil},
		})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("formulas: %v %s", err, res.Body)
		}
		if got := res.JSON200.Constants["R0"]; got != 0 {
			t.Errorf("R0 in force = %v, want the default 0 once the sensor's 8000 is removed", got)
		}
		for _, c := range res.JSON200.ConstantDefinitions {
			if c.Key == "R0" && c.Value != nil {
				t.Errorf("R0 still has its own value %v", *c.Value)
			}
		}
	})

	t.Run("ConstantWithoutValue", func(t *testing.T) {
		write := piezometerWrite()
		(*write.Constants)[1].Default = nil // R0 has no default
		nodef, err := admin.CreateBlueprintWithResponse(ctx, tn.orgID, write)
		if err != nil || nodef.StatusCode() != 201 {
			t.Fatalf("blueprint: %v %s", err, nodef.Body)
		}
		s, err := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: "no R0", BlueprintId: &nodef.JSON201.Id})
		if err != nil || s.StatusCode() != 201 {
			t.Fatalf("sensor: %v %s", err, s.Body)
		}
		sensor := tn
		sensor.sensorID = s.JSON201.Id
		sids := ids(*s.JSON201)
		post(t, editor, sensor, reading(t, "2024-05-01T00:00:00Z", client.Values{sids["freq"]: 2000}))
		got, _ := list(t, editor, sensor, client.ListReadingsParams{Outputs: ptr(true)})
		if o := *got[0].Outputs; len(o) != 1 || o[sids["digits"]] != 4000 {
			t.Errorf("outputs %v, want digits alone: pressure needs R0, which has no value", o)
		}
	})

	t.Run("UnknownInputIsRefusedAtomically", func(t *testing.T) {
		res, err := editor.PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, a.Id, nil, []client.ReadingInput{
			reading(t, "2024-08-01T00:00:00Z", client.Values{ia["freq"]: 2600}),
			reading(t, "2024-08-02T00:00:00Z", client.Values{ia["freq"]: 2600, ib["freq"]: 1}), // sensor B's id
		})
		if err != nil {
			t.Fatal(err)
		}
		got := wantError(t, res.StatusCode(), res.Body, 400, "invalid")
		if !strings.Contains(got.Message, "element 1") || !strings.Contains(got.Message, ib["freq"]) {
			t.Errorf("message %q should name element 1 and input %s", got.Message, ib["freq"])
		}
		if readings, _ := list(t, editor, sensorA, client.ListReadingsParams{}); len(readings) != 3 {
			t.Errorf("%d readings after a refused batch, want the 3 from before", len(readings))
		}
	})

	t.Run("PlainSensorHasEmptyOutputs", func(t *testing.T) {
		post(t, editor, tn, reading(t, "2024-05-01T00:00:00Z", client.Values{"5": 1}))
		got, _ := list(t, editor, tn, client.ListReadingsParams{Outputs: ptr(true)})
		if got[0].Outputs == nil || len(*got[0].Outputs) != 0 {
			t.Errorf("outputs %v, want an empty object", got[0].Outputs)
		}
	})
}

func TestBlueprintLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	admin := e.client(tn.tokens[store.Admin])

	created, _ := admin.CreateBlueprintWithResponse(ctx, tn.orgID, piezometerWrite())
	bp := created.JSON201.Id
	s, _ := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: "PZ", BlueprintId: &bp})
	sensor := *s.JSON201

	t.Run("EditingTheBlueprintLeavesInstances", func(t *testing.T) {
		write := piezometerWrite()
		write.Outputs[1].Formula = "G * digits"
		res, err := admin.UpdateBlueprintWithResponse(ctx, tn.orgID, bp, write)
		if err != nil || res.StatusCode() != 200 || res.JSON200.Outputs[1].Formula != "G * digits" {
			t.Fatalf("update: %v %s", err, res.Body)
		}
		got, _ := admin.GetSensorWithResponse(ctx, tn.orgID, tn.projectID, sensor.Id)
		if got.JSON200.Outputs[1].Formula != "G * (R0 - digits)" {
			t.Errorf("the instance's formula became %q; it keeps its own copy", got.JSON200.Outputs[1].Formula)
		}
	})

	t.Run("SameBlueprintKeepsIDs", func(t *testing.T) {
		res, err := admin.UpdateSensorWithResponse(ctx, tn.orgID, tn.projectID, sensor.Id, client.SensorUpdate{BlueprintId: &bp, Constants: &client.ConstantValues{"G": 0.3}})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("update: %v %s", err, res.Body)
		}
		if fmt.Sprint(ids(*res.JSON200)) != fmt.Sprint(ids(sensor)) || res.JSON200.Constants["G"] != 0.3 {
			t.Errorf("sensor %+v: want the same ids and G 0.3", *res.JSON200)
		}
		if res.JSON200.FormulasVersion <= sensor.FormulasVersion {
			t.Errorf("formulas_version %d, want it past %d", res.JSON200.FormulasVersion, sensor.FormulasVersion)
		}
	})

	t.Run("AnotherBlueprintGivesNewIDs", func(t *testing.T) {
		other, _ := admin.CreateBlueprintWithResponse(ctx, tn.orgID, piezometerWrite())
		res, err := admin.UpdateSensorWithResponse(ctx, tn.orgID, tn.projectID, sensor.Id, client.SensorUpdate{BlueprintId: &other.JSON201.Id})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("attach: %v %s", err, res.Body)
		}
		for key, id := range ids(*res.JSON200) {
			if ids(sensor)[key] == id {
				t.Errorf("%s kept id %s under a new blueprint", key, id)
			}
		}
		sensor = *res.JSON200
	})

	t.Run("AnotherBlueprintWithReadings", func(t *testing.T) {
		withReadings := tn
		withReadings.sensorID = sensor.Id
		post(t, e.client(tn.tokens[store.Editor]), withReadings, reading(t, "2024-05-01T00:00:00Z", client.Values{ids(sensor)["freq"]: 1}))
		res, _ := admin.UpdateSensorWithResponse(ctx, tn.orgID, tn.projectID, sensor.Id, client.SensorUpdate{BlueprintId: &bp, Name: ptr("renamed")})
		wantError(t, res.StatusCode(), res.Body, 409, "conflict")
		got, _ := admin.GetSensorWithResponse(ctx, tn.orgID, tn.projectID, sensor.Id)
		if got.JSON200.Name == "renamed" {
			t.Error("a refused update renamed the sensor")
		}
		// A plain sensor with readings cannot take a blueprint either.
		post(t, e.client(tn.tokens[store.Editor]), tn, reading(t, "2024-05-01T00:00:00Z", client.Values{"1": 1}))
		plain, _ := admin.UpdateSensorWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, client.SensorUpdate{BlueprintId: &bp})
		wantError(t, plain.StatusCode(), plain.Body, 409, "conflict")
	})

	t.Run("BlueprintOfAnotherOrg", func(t *testing.T) {
		other := e.newTenant("Globex")
		// As another organization's id in the path would be: not found.
		res, _ := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: "x", BlueprintId: &other.blueprintID})
		wantError(t, res.StatusCode(), res.Body, 404, "not_found")
		get, _ := admin.GetBlueprintWithResponse(ctx, tn.orgID, other.blueprintID)
		wantError(t, get.StatusCode(), get.Body, 404, "not_found")
	})

	t.Run("DeleteKeepsInstances", func(t *testing.T) {
		del, _ := admin.DeleteBlueprintWithResponse(ctx, tn.orgID, *sensor.BlueprintId)
		if del.StatusCode() != 204 {
			t.Fatalf("delete: %d %s", del.StatusCode(), del.Body)
		}
		got, _ := admin.GetSensorWithResponse(ctx, tn.orgID, tn.projectID, sensor.Id)
		if got.JSON200.BlueprintId != nil || fmt.Sprint(ids(*got.JSON200)) != fmt.Sprint(ids(sensor)) {
			t.Errorf("after deleting its blueprint the sensor is %+v; want its instance kept, blueprint_id gone", *got.JSON200)
		}
		list, _ := admin.ListBlueprintsWithResponse(ctx, tn.orgID, nil)
		if list.StatusCode() != 200 || len(list.JSON200.Items) != 2 {
			t.Errorf("blueprints: %d %s, want the fixture's and the first one", list.StatusCode(), list.Body)
		}
	})

	t.Run("ConstantsWithoutBlueprint", func(t *testing.T) {
		res, _ := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: "x", Constants: &client.ConstantValues{"G": 1}})
		wantError(t, res.StatusCode(), res.Body, 400, "invalid")
		formulas, _ := admin.UpdateFormulasWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, client.FormulasUpdate{Constants: &map[string]*float64{"G": ptr(1.0)}})
		wantError(t, formulas.StatusCode(), formulas.Body, 409, "conflict")
	})
}

// TestOutputDecimals: an output's decimals are the blueprint's to declare
// and a sensor's to keep, like its formula; the values stay as computed.
func TestOutputDecimals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	admin := e.client(tn.tokens[store.Admin])

	write := piezometerWrite()
	write.Outputs[1].Decimals = ptr(1)
	created, err := admin.CreateBlueprintWithResponse(ctx, tn.orgID, write)
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create: %v %s", err, created.Body)
	}
	bp := created.JSON201
	if got := bp.Outputs[1].Decimals; got == nil || *got != 1 || bp.Outputs[0].Decimals != nil {
		t.Errorf("blueprint's decimals = %v, %v; want none for digits, 1 for pressure", bp.Outputs[0].Decimals, got)
	}
	s, err := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: "PZ", BlueprintId: &bp.Id, Constants: &client.ConstantValues{"R0": 9000}})
	if err != nil || s.StatusCode() != 201 {
		t.Fatalf("create sensor: %v %s", err, s.Body)
	}
	sensor := *s.JSON201
	if got := sensor.Outputs[1].Decimals; got == nil || *got != 1 || sensor.Outputs[0].Decimals != nil {
		t.Errorf("sensor's decimals = %v, %v; want none for digits, 1 for pressure", sensor.Outputs[0].Decimals, got)
	}

	// The values keep every digit: 0.1 × (9000 − 2801.5² / 1000) = 115.159775.
	piezo := tn
	piezo.sensorID = sensor.Id
	post(t, admin, piezo, reading(t, "2024-05-01T00:00:00Z", client.Values{ids(sensor)["freq"]: 2801.5}))
	got, _ := list(t, admin, piezo, client.ListReadingsParams{Outputs: ptr(true)})
	if v := (*got[0].Outputs)[ids(sensor)["pressure"]]; math.Abs(v-115.159775) > 1e-9 {
		t.Errorf("pressure = %v, want 115.159775 as computed", v)
	}

	// Like a formula, a new precision of the blueprint leaves the sensor its own.
	write.Outputs[1].Decimals = ptr(3)
	if res, err := admin.UpdateBlueprintWithResponse(ctx, tn.orgID, bp.Id, write); err != nil || res.StatusCode() != 200 {
		t.Fatalf("update: %v %s", err, res.Body)
	}
	kept, _ := admin.GetSensorWithResponse(ctx, tn.orgID, tn.projectID, sensor.Id)
	if got := kept.JSON200.Outputs[1].Decimals; got == nil || *got != 1 {
		t.Errorf("after the blueprint's edit the sensor's decimals = %v, want its own 1", got)
	}
}

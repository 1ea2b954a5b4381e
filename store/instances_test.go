package store_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// newInstance is an instance of testBlueprint with its defaults and a
// calibration, without ids.
func newInstance(t *testing.T) store.Instance {
	t.Helper()
	inst, err := testBlueprint().Instantiate(map[string]float64{"offset": 1})
	if err != nil {
		t.Fatal(err)
	}
	inst.Constants[0].Calibrations = []store.Calibration{{From: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Value: 3}}
	inst.Inputs[0].Baselines = []store.Calibration{{From: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Value: 230}}
	return inst
}

func TestInstance_Clone(t *testing.T) {
	inst := newInstance(t)
	c := inst.Clone()
	c.Inputs[0].Key = "changed"
	c.Outputs[0].Formula = "0"
	c.Constants[0].Key = "changed"
	c.Constants[0].Calibrations[0].Value = 0
	c.Inputs[0].Baselines[0].Value = 0
	if want := newInstance(t); !reflect.DeepEqual(inst, want) {
		t.Fatalf("after changing a clone, the instance is %+v, want %+v", inst, want)
	}
}

func TestInstance_SetConstants(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		inst := newInstance(t)
		values := store.Values(map[string]float64{"k": 5})
		values["offset"] = nil // back to the default, here none
		if err := inst.SetConstants(values); err != nil {
			t.Fatal(err)
		}
		if v := inst.Constants[0].Value; v == nil || *v != 5 {
			t.Fatalf("k: Value=%v, want 5", v)
		}
		if v := inst.Constants[1].Value; v != nil {
			t.Fatalf("offset: Value=%v, want nil", *v)
		}
		if got, want := *inst.Constants[0].Default, 2.0; got != want {
			t.Fatalf("k: Default=%v, want %v", got, want)
		}
		if got, want := len(inst.Constants[0].Calibrations), 1; got != want {
			t.Fatalf("k: %d calibrations, want %d", got, want)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		inst := newInstance(t)
		wantDetail(t, inst.SetConstants(store.Values(map[string]float64{"gain": 5})), "constant", "gain")
	})
}

func TestValues(t *testing.T) {
	values := store.Values(map[string]float64{"a": 1, "b": 2})
	if got, want := len(values), 2; got != want {
		t.Fatalf("len=%d, want %d", got, want)
	}
	if *values["a"] != 1 || *values["b"] != 2 {
		t.Fatalf("Values = a: %v, b: %v; want 1 and 2", *values["a"], *values["b"])
	}
}

func TestInstance_SetFormulas(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		inst := newInstance(t)
		if err := inst.SetFormulas(map[string]string{"p": "u * i"}); err != nil {
			t.Fatal(err)
		}
		if got, want := inst.Outputs[0].Formula, "u * i"; got != want {
			t.Fatalf("Formula=%q, want %q", got, want)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		inst := newInstance(t)
		wantDetail(t, inst.SetFormulas(map[string]string{"u": "1"}), "output", "u")
	})
}

func TestInstance_SetCalibrations(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	t.Run("OK", func(t *testing.T) {
		inst := newInstance(t)
		err := inst.SetCalibrations(map[string][]store.Calibration{
			"k":      {},
			"offset": {{From: day(3), Value: 3}, {From: day(1), Value: 1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := inst.Constants[0].Calibrations; len(got) != 0 {
			t.Fatalf("k: calibrations %v, want none", got)
		}
		want := []store.Calibration{{From: day(1), Value: 1}, {From: day(3), Value: 3}}
		if got := inst.Constants[1].Calibrations; !reflect.DeepEqual(got, want) {
			t.Fatalf("offset: calibrations %v, want %v in time order", got, want)
		}
	})
	t.Run("ErrInvalid/Constant", func(t *testing.T) {
		inst := newInstance(t)
		err := inst.SetCalibrations(map[string][]store.Calibration{"p": {{From: day(1), Value: 1}}})
		wantDetail(t, err, "constant", "p")
	})
	t.Run("ErrInvalid/SameInstant", func(t *testing.T) {
		inst := newInstance(t)
		// One instant, written in two time zones.
		err := inst.SetCalibrations(map[string][]store.Calibration{"k": {
			{From: day(2), Value: 1},
			{From: day(2).In(time.FixedZone("CET", 3600)), Value: 2},
		}})
		wantDetail(t, err, "constant", "k")
	})
}

func TestInstance_SetBaselines(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	t.Run("OK", func(t *testing.T) {
		inst := newInstance(t)
		err := inst.SetBaselines([]store.Baseline{
			{From: day(3), Values: map[string]float64{"u": 231}},
			{From: day(1), Values: map[string]float64{"u": 229, "i": 0.5}},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.Calibration{{From: day(1), Value: 229}, {From: day(3), Value: 231}}
		if got := inst.Inputs[0].Baselines; !reflect.DeepEqual(got, want) {
			t.Fatalf("u: baselines %v, want %v in time order, the previous one replaced", got, want)
		}
		if got, want := inst.Inputs[1].Baselines, []store.Calibration{{From: day(1), Value: 0.5}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("i: baselines %v, want %v", got, want)
		}
	})
	t.Run("NoneRemovesThem", func(t *testing.T) {
		inst := newInstance(t)
		if err := inst.SetBaselines(nil); err != nil {
			t.Fatal(err)
		}
		if got := inst.Inputs[0].Baselines; got != nil {
			t.Fatalf("u: baselines %v, want none", got)
		}
	})
	t.Run("ErrInvalid/Input", func(t *testing.T) {
		inst := newInstance(t)
		err := inst.SetBaselines([]store.Baseline{{From: day(1), Values: map[string]float64{"k": 1}}})
		wantDetail(t, err, "input", "k")
	})
	t.Run("ErrInvalid/SameInstant", func(t *testing.T) {
		inst := newInstance(t)
		err := inst.SetBaselines([]store.Baseline{
			{From: day(2), Values: map[string]float64{"u": 1}},
			{From: day(2).In(time.FixedZone("CET", 3600)), Values: map[string]float64{"i": 1}},
		})
		wantDetail(t, err, "from", "2026-01-02T00:00:00Z")
	})
}

// TestInstance_checkInputs checks, through InsertReadings, that a sensor
// with an instance takes readings of its inputs only, all or none of a
// batch, and that one without takes any input id.
func TestInstance_checkInputs(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	sensor, key := newBlueprintSensor(t, db)
	inputs, output := sensor.Instance.Inputs, sensor.Instance.Outputs[0]
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reading := func(seconds int, ids ...int64) store.Reading {
		return store.Reading{Time: at.Add(time.Duration(seconds) * time.Second), InputIDs: ids, Values: make([]float64, len(ids))}
	}
	// stored returns how many readings the sensor has.
	stored := func(key store.SensorKey) int {
		var n int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM readings WHERE sensor_id = $1`, key.SensorID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("OK", func(t *testing.T) {
		readings := []store.Reading{reading(0, inputs[0].ID, inputs[1].ID), reading(1, inputs[1].ID)}
		if _, err := insert(t.Context(), db, key, readings); err != nil {
			t.Fatal(err)
		}
		if got, want := stored(key), 2; got != want {
			t.Fatalf("%d readings stored, want %d", got, want)
		}
	})
	for name, id := range map[string]int64{"ErrInvalid/Unknown": unknownID, "ErrInvalid/Output": output.ID} {
		t.Run(name, func(t *testing.T) {
			before := stored(key)
			readings := []store.Reading{reading(10, inputs[0].ID), reading(11, inputs[0].ID, id)}
			_, err := insert(t.Context(), db, key, readings)
			wantDetail(t, err, "input_id", id)
			if got, want := details(err)["index"], 1; got != want {
				t.Fatalf("index=%v, want %v", got, want)
			}
			if got, want := stored(key), before; got != want {
				t.Fatalf("%d readings stored after a refused batch, want %d", got, want)
			}
		})
	}
	t.Run("NoInstance", func(t *testing.T) {
		plain := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
		if _, err := insert(t.Context(), db, plain, []store.Reading{reading(0, unknownID)}); err != nil {
			t.Fatal(err)
		}
		if got, want := stored(plain), 1; got != want {
			t.Fatalf("%d readings stored, want %d", got, want)
		}
	})
}

// wantDetail fails the test unless err is Invalid and its details have
// key with value.
func wantDetail(t *testing.T, err error, key string, value any) {
	t.Helper()
	wantCode(t, err, apperr.Invalid)
	if got := details(err)[key]; got != value {
		t.Fatalf("err=%v: details[%q]=%v, want %v", err, key, got, value)
	}
}

func details(err error) map[string]any {
	e, _ := errors.AsType[*apperr.Error](err)
	return e.Details
}

var inputIDTests = []struct {
	inst *store.Instance
	name string
	id   int64
	ok   bool
}{
	{&store.Instance{Inputs: []store.InstanceInput{{ID: 7, Key: "freq"}, {ID: 8, Key: "temp"}}}, "temp", 8, true},
	{&store.Instance{Inputs: []store.InstanceInput{{ID: 7, Key: "freq"}, {ID: 8, Key: "temp"}}}, "7", 7, true},
	{&store.Instance{Inputs: []store.InstanceInput{{ID: 7, Key: "freq"}}}, "07", 0, false},
	{&store.Instance{Inputs: []store.InstanceInput{{ID: 7, Key: "freq"}}}, "9", 0, false},
	{nil, "12", 12, true},
	{nil, "freq", 0, false},
	{nil, "-1", -1, false},
}

// TestInstance_InputID finds an input a client names by key or id, and
// lists those it may name.
func TestInstance_InputID(t *testing.T) {
	for _, tt := range inputIDTests {
		if id, ok := tt.inst.InputID(tt.name); ok != tt.ok || (ok && id != tt.id) {
			t.Errorf("InputID(%q) of %v = %d, %v; want %d, %v", tt.name, tt.inst, id, ok, tt.id, tt.ok)
		}
	}
	inst := &store.Instance{Inputs: []store.InstanceInput{{ID: 7, Key: "freq"}, {ID: 8, Key: "temp"}}}
	if got, want := inst.InputList(), "its inputs are freq or 7, temp or 8"; got != want {
		t.Errorf("InputList = %q, want %q", got, want)
	}
	var none *store.Instance
	if got := none.InputList(); !strings.Contains(got, "no blueprint") {
		t.Errorf("InputList without an instance = %q, want it to say there is no blueprint", got)
	}
}

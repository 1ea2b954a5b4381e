package sensing_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// newService returns the domain on a fresh, migrated database of the
// test's own, with the service's default checks.
func newService(t *testing.T) (*sensing.Service, *store.DB) {
	t.Helper()
	db := store.New(storetest.NewPool(t))
	return sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{MaxFuture: 24 * time.Hour}), db
}

// fixture is a project of its own, with a sensor of the power blueprint
// (inputs u and i, output p = u * i * k, k 2 by default) and a sensor
// without a blueprint.
type fixture struct {
	project store.Project
	sensor  store.Sensor // of the power blueprint
	key     store.SensorKey
	plain   store.SensorKey // without a blueprint
}

func newFixture(t testing.TB, db *store.DB) fixture {
	t.Helper()
	ctx := t.Context()
	org, err := db.CreateOrg(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	project, err := db.CreateProject(ctx, org.ID, "dam", "")
	if err != nil {
		t.Fatal(err)
	}
	two := 2.0
	b, err := db.CreateBlueprint(ctx, org.ID, store.Blueprint{
		Name:      "power",
		Inputs:    []store.BlueprintInput{{Key: "u", Name: "voltage"}, {Key: "i", Name: "current"}},
		Constants: []store.BlueprintConstant{{Key: "k", Name: "gain", Default: &two}},
		Outputs:   []store.BlueprintOutput{{Key: "p", Name: "power", Formula: "u * i * k"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := b.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	sensor, err := db.CreateSensor(ctx, org.ID, project.ID, "meter", "", &store.Attachment{BlueprintID: b.ID, Instance: inst})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := db.CreateSensor(ctx, org.ID, project.ID, "plain", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{
		project: project, sensor: sensor,
		key:   store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: sensor.ID},
		plain: store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: plain.ID},
	}
}

// u and i are the ids of the sensor's inputs u and i.
func (f fixture) u() int64 { return f.sensor.Instance.Inputs[0].ID }
func (f fixture) i() int64 { return f.sensor.Instance.Inputs[1].ID }

// minute is an instant of the tests: minute m of 1 May 2024, noon.
func minute(m int) time.Time { return time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC) }

// readingsOf lists the sensor's readings, each a copy, in time order.
func readingsOf(t *testing.T, db *store.DB, key store.SensorKey) []store.Reading {
	t.Helper()
	var got []store.Reading
	q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime}
	err := db.ListReadings(t.Context(), store.Sensor{ID: key.SensorID}, q, func(r *store.Reading) error {
		got = append(got, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// events lists the project's alarm events as "kind level", oldest first.
func events(t *testing.T, db *store.DB, key store.SensorKey) []string {
	t.Helper()
	list, _, err := db.ListAlarmEvents(t.Context(), key.OrgID, key.ProjectID, store.AlarmEventQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		out = append(out, e.Kind+" "+e.LevelName)
	}
	return out
}

// currentAlarms lists the project's current alarms.
func currentAlarms(t *testing.T, db *store.DB, key store.SensorKey) []store.Alarm {
	t.Helper()
	list, _, err := db.ListAlarms(t.Context(), key.OrgID, key.ProjectID, store.AlarmKey{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// sliceSource yields readings, reusing one Reading as a file reader does,
// and fails with err at reading failAt (when err is set).
type sliceSource struct {
	readings []store.Reading
	next     int
	failAt   int
	err      error
	current  store.Reading
}

func (s *sliceSource) Next() (*store.Reading, error) {
	if s.err != nil && s.next == s.failAt {
		return nil, s.err
	}
	if s.next == len(s.readings) {
		return nil, nil
	}
	r := s.readings[s.next]
	s.next++
	s.current.Time = r.Time
	s.current.InputIDs = append(s.current.InputIDs[:0], r.InputIDs...)
	s.current.Values = append(s.current.Values[:0], r.Values...)
	return &s.current, nil
}

func (s *sliceSource) Where() (string, map[string]any) {
	return fmt.Sprintf("reading %d", s.next-1), map[string]any{"reading": s.next - 1}
}

// wantCode fails the test unless err carries the code want.
func wantCode(t *testing.T, err error, want apperr.Code) {
	t.Helper()
	if got := apperr.CodeOf(err); err == nil || got != want {
		t.Fatalf("err = %v (code %s), want code %s", err, got, want)
	}
}

// ingest stores readings as a batch, failing the test on an error.
func ingest(t *testing.T, core *sensing.Service, key store.SensorKey, readings ...store.Reading) store.Written {
	t.Helper()
	written, err := core.Ingest(context.WithoutCancel(t.Context()), key, sensing.NewBatch(readings))
	if err != nil {
		t.Fatal(err)
	}
	return written
}

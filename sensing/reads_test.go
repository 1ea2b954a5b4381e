package sensing_test

import (
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// TestReadRoundTrips counts the statements of the reads a chart and a
// dashboard make most: a page of readings is one round trip (the sensor,
// its flags and its readings, store.DB.ReadPage), latest values one (the
// project, the sensors' newest readings and their flags), unless a flag
// covers a newest reading.
func TestReadRoundTrips(t *testing.T) {
	core, db, tracer := newCountedService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	readings := make([]store.Reading, 10)
	for n := range readings {
		readings[n] = store.Reading{Time: minute(n), InputIDs: []int64{f.u(), f.i()}, Values: []float64{float64(n), 1}}
	}
	if _, err := core.Ingest(ctx, f.key, sensing.NewBatch(readings)); err != nil {
		t.Fatal(err)
	}
	count := func(read func() error) int64 {
		t.Helper()
		before := tracer.n.Load()
		if err := read(); err != nil {
			t.Fatal(err)
		}
		return tracer.n.Load() - before
	}
	page := func(opts sensing.ReadOptions) func() error {
		return func() error {
			sink := &countingSink{}
			q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000}
			if err := core.ListReadings(ctx, f.key, q, opts, sink); err != nil {
				return err
			}
			if sink.sensors != 1 || sink.readings != len(readings) {
				t.Errorf("ListReadings gave %d sensors and %d readings, want 1 and %d", sink.sensors, sink.readings, len(readings))
			}
			return nil
		}
	}
	latest := func() error {
		got, _, err := core.LatestReadings(ctx, f.key.OrgID, f.key.ProjectID, 0, 100, sensing.LatestOptions{})
		if err == nil && (len(got) != 2 || got[0].Reading == nil || !got[0].Reading.Time.Equal(minute(9))) {
			t.Errorf("LatestReadings = %+v, want the meter's reading at minute 9 and the plain sensor", got)
		}
		return err
	}
	past := time.Now()

	tests := []struct {
		name string
		read func() error
		want int64
	}{
		{"Page", page(sensing.ReadOptions{}), 1},
		{"PageWithOutputs", page(sensing.ReadOptions{Outputs: true}), 1},
		{"PageWithFlags", page(sensing.ReadOptions{Flags: true}), 1},
		{"PageAsOf", page(sensing.ReadOptions{AsOf: &past}), 3}, // the sensor, its instance then, the page
		{"Latest", latest, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := count(tt.read); got != tt.want {
				t.Errorf("%d statements, want %d", got, tt.want)
			}
		})
	}

	t.Run("LatestFlagged", func(t *testing.T) {
		user, err := db.EnsureUser(ctx, "ada@example.com", "ada")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := core.SetFlag(ctx, f.key, sensing.FlagEdit{Flag: store.Suspect, From: minute(9), To: minute(9), Reason: "a test", By: user.ID}); err != nil {
			t.Fatal(err)
		}
		// The flagged sensor's flags, and its newest reading they leave.
		if got, want := count(latest), int64(3); got != want {
			t.Errorf("%d statements, want %d", got, want)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		other := newFixture(t, db)
		beyond := store.SensorKey{OrgID: other.key.OrgID, ProjectID: other.key.ProjectID, SensorID: f.key.SensorID}
		sink := &countingSink{}
		q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000}
		err := core.ListReadings(ctx, beyond, q, sensing.ReadOptions{Outputs: true}, sink)
		if apperr.CodeOf(err) != apperr.NotFound || sink.sensors != 0 || sink.readings != 0 {
			t.Errorf("ListReadings of another organization's sensor = %v, with %d sensors and %d readings; want NotFound and nothing", err, sink.sensors, sink.readings)
		}
	})
}

// countingSink counts what a read gives it.
type countingSink struct{ sensors, readings int }

func (s *countingSink) Sensor(store.Sensor, *sensing.Outputs) error { s.sensors++; return nil }

func (s *countingSink) Reading(*store.Reading, *sensing.Outputs) error { s.readings++; return nil }

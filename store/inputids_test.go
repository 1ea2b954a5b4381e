package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// InputIDs reads a range a bounded number of readings at a time, and says
// where the next call goes on, until the range is done.
func TestInputIDsInChunks(t *testing.T) {
	ctx := t.Context()
	db := store.New(storetest.NewPool(t))
	org, err := db.CreateOrg(ctx, "ids")
	if err != nil {
		t.Fatal(err)
	}
	project, err := db.CreateProject(ctx, org.ID, "ids", "")
	if err != nil {
		t.Fatal(err)
	}
	sensor, err := db.CreateSensor(ctx, org.ID, project.ID, "ids", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	// Readings 0 to 4, a second apart: inputs {1, 2}, {1}, {5}, {3}, {1, 9}.
	inputs := [][]int64{{1, 2}, {1}, {5}, {3}, {1, 9}}
	var readings []store.Reading
	for i, ids := range inputs {
		readings = append(readings, store.Reading{Time: base.Add(time.Duration(i) * time.Second), InputIDs: ids, Values: make([]float64, len(ids))})
	}
	if _, err := db.InsertReadings(ctx, store.SensorKey{OrgID: org.ID, ProjectID: project.ID, SensorID: sensor.ID}, readings); err != nil {
		t.Fatal(err)
	}
	to := base.Add(10 * time.Second)
	for _, tt := range []struct {
		from     time.Time
		limit    int
		wantIDs  string
		wantNext time.Time
	}{
		{base, 2, "[1 2]", base.Add(time.Second + time.Microsecond)},
		{base.Add(time.Second + time.Microsecond), 2, "[3 5]", base.Add(3*time.Second + time.Microsecond)},
		{base.Add(3*time.Second + time.Microsecond), 2, "[1 9]", to.Add(time.Microsecond)}, // one reading: done
		{base, 5, "[1 2 3 5 9]", base.Add(4*time.Second + time.Microsecond)},               // exactly full: one more call
		{base.Add(5 * time.Second), 5, "[]", to.Add(time.Microsecond)},
	} {
		ids, next, err := db.InputIDs(ctx, sensor, tt.from, to, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(ids); got != tt.wantIDs || !next.Equal(tt.wantNext) {
			t.Errorf("InputIDs(from %v, limit %d) = %s, next %v; want %s, next %v", tt.from, tt.limit, got, next, tt.wantIDs, tt.wantNext)
		}
	}
}

package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

var flagBase = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

// setFlag sets the flag in a transaction of its own and returns it.
func setFlag(t *testing.T, db *store.DB, sensorID int64, spec store.FlagSpec) store.Flag {
	t.Helper()
	var set []store.Flag
	err := db.InTx(t.Context(), func(tx *store.Tx) error {
		var err error
		set, err = tx.SetFlag(t.Context(), sensorID, spec)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 1 {
		t.Fatalf("SetFlag set %d flags, want 1", len(set))
	}
	return set[0]
}

// clearFlags clears the sensor's flags over [from, to] and returns those cleared.
func clearFlags(t *testing.T, db *store.DB, sensorID int64, from, to time.Time) []store.Flag {
	t.Helper()
	var cleared []store.Flag
	err := db.InTx(t.Context(), func(tx *store.Tx) error {
		var err error
		cleared, err = tx.ClearFlags(t.Context(), sensorID, nil, from, to, nil, "fixed")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return cleared
}

func hourSpec(from, to int, reason string) store.FlagSpec {
	return store.FlagSpec{Flag: store.Suspect, From: flagBase.Add(time.Duration(from) * time.Hour),
		To: flagBase.Add(time.Duration(to) * time.Hour), Reason: reason}
}

func flagIDs(flags []store.Flag) []int64 { return ids(flags, func(f store.Flag) int64 { return f.ID }) }

func TestSetFlag(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	user := newUser(t, db, "ann")
	input := int64(1)
	tests := []struct {
		name string
		spec store.FlagSpec
	}{
		{"whole reading", store.FlagSpec{Flag: store.Suspect, From: flagBase, To: flagBase.Add(time.Hour), Reason: "odd", SetBy: &user.ID}},
		{"one input", store.FlagSpec{InputID: &input, Flag: store.Rejected, From: flagBase, To: flagBase, Reason: "broken", SetBy: &user.ID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setFlag(t, db, key.SensorID, tt.spec)
			if f.ID == 0 || f.SensorID != key.SensorID || f.Flag != tt.spec.Flag || !f.From.Equal(tt.spec.From) || !f.To.Equal(tt.spec.To) ||
				f.Reason != tt.spec.Reason || f.SetBy == nil || *f.SetBy != user.ID || f.ClearedAt != nil || f.SetAt.IsZero() ||
				(f.InputID == nil) != (tt.spec.InputID == nil) || (f.InputID != nil && *f.InputID != *tt.spec.InputID) {
				t.Errorf("SetFlag = %+v, want of %+v", f, tt.spec)
			}
			stored, err := db.SensorFlags(t.Context(), key.SensorID, tt.spec.From, tt.spec.To, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(flagIDs(stored), f.ID) {
				t.Errorf("stored flags %v lack %d", flagIDs(stored), f.ID)
			}
		})
	}
}

func TestSensorFlags(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	early := setFlag(t, db, key.SensorID, hourSpec(0, 1, "early"))
	late := setFlag(t, db, key.SensorID, hourSpec(5, 6, "late"))
	// The clearing's now() must come later than the setting's: the
	// database's clock is this machine's, so wait until it has passed.
	for !time.Now().After(late.SetAt) {
	}
	cleared := clearFlags(t, db, key.SensorID, flagBase.Add(5*time.Hour), flagBase.Add(6*time.Hour))
	if len(cleared) != 1 || cleared[0].ID != late.ID || cleared[0].ClearedAt == nil {
		t.Fatalf("cleared %+v, want flag %d", cleared, late.ID)
	}
	clearedAt := *cleared[0].ClearedAt
	tests := []struct {
		name     string
		from, to int // hours after flagBase
		asOf     *time.Time
		want     []int64
	}{
		{"in force now", 0, 10, nil, []int64{early.ID}},
		{"touching the end", 1, 3, nil, []int64{early.ID}},
		{"outside", 2, 4, nil, nil},
		{"before they were set", 0, 10, ptr(early.SetAt.Add(-time.Microsecond)), nil},
		{"before the clearing", 0, 10, ptr(clearedAt.Add(-time.Microsecond)), []int64{early.ID, late.ID}},
		{"at the clearing", 0, 10, &clearedAt, []int64{early.ID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to := flagBase.Add(time.Duration(tt.from)*time.Hour), flagBase.Add(time.Duration(tt.to)*time.Hour)
			got, err := db.SensorFlags(t.Context(), key.SensorID, from, to, tt.asOf)
			if err != nil {
				t.Fatal(err)
			}
			var inTx []store.Flag
			if err := db.InTx(t.Context(), func(tx *store.Tx) error {
				var err error
				inTx, err = tx.SensorFlags(t.Context(), key.SensorID, from, to, tt.asOf)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(flagIDs(got), tt.want) || !slices.Equal(flagIDs(inTx), tt.want) {
				t.Errorf("SensorFlags = %v, in a transaction %v; want %v", flagIDs(got), flagIDs(inTx), tt.want)
			}
		})
	}
}

func TestListFlags(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	org := newOrg(t, db)
	key := newSensor(t, db, newProject(t, db, org), nil)
	a := setFlag(t, db, key.SensorID, hourSpec(0, 1, "a"))
	b := setFlag(t, db, key.SensorID, hourSpec(2, 3, "b"))
	c := setFlag(t, db, key.SensorID, hourSpec(4, 5, "c"))
	clearFlags(t, db, key.SensorID, flagBase.Add(2*time.Hour), flagBase.Add(3*time.Hour))
	all := store.FlagQuery{From: flagBase, To: flagBase.Add(24 * time.Hour), Limit: 10}
	with := func(f func(*store.FlagQuery)) store.FlagQuery { q := all; f(&q); return q }
	tests := []struct {
		name     string
		key      store.SensorKey
		q        store.FlagQuery
		want     []int64
		wantMore bool
		wantCode apperr.Code
	}{
		{"in force", key, all, []int64{a.ID, c.ID}, false, ""},
		{"cleared too", key, with(func(q *store.FlagQuery) { q.Cleared = true }), []int64{a.ID, b.ID, c.ID}, false, ""},
		{"range", key, with(func(q *store.FlagQuery) { q.From, q.To = flagBase.Add(time.Hour), flagBase.Add(4*time.Hour) }), []int64{a.ID, c.ID}, false, ""},
		{"first page", key, with(func(q *store.FlagQuery) { q.Limit = 1 }), []int64{a.ID}, true, ""},
		{"next page", key, with(func(q *store.FlagQuery) { q.After, q.Limit = a.ID, 1 }), []int64{c.ID}, false, ""},
		{"none in range", key, with(func(q *store.FlagQuery) { q.From = flagBase.Add(10 * time.Hour) }), nil, false, ""},
		{"unknown sensor", store.SensorKey{OrgID: org.ID, ProjectID: key.ProjectID, SensorID: unknownID}, all, nil, false, apperr.NotFound},
		{"another organization's", store.SensorKey{OrgID: unknownID, ProjectID: key.ProjectID, SensorID: key.SensorID}, all, nil, false, apperr.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, more, err := db.ListFlags(t.Context(), tt.key, tt.q)
			if tt.wantCode != "" {
				wantCode(t, err, tt.wantCode)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(flagIDs(got), tt.want) || more != tt.wantMore {
				t.Errorf("ListFlags = %v, more %v; want %v, more %v", flagIDs(got), more, tt.want, tt.wantMore)
			}
		})
	}
}

func TestFlaggedAt(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	project := newProject(t, db, newOrg(t, db))
	s1, s2 := newSensor(t, db, project, nil).SensorID, newSensor(t, db, project, nil).SensorID
	setFlag(t, db, s1, hourSpec(0, 1, "one"))
	setFlag(t, db, s2, hourSpec(3, 4, "two"))
	setFlag(t, db, s2, hourSpec(6, 7, "cleared"))
	clearFlags(t, db, s2, flagBase.Add(6*time.Hour), flagBase.Add(7*time.Hour))
	h := func(n int) time.Time { return flagBase.Add(time.Duration(n) * time.Hour) }
	tests := []struct {
		name      string
		sensorIDs []int64
		at        []time.Time
		want      map[int64]bool
	}{
		{"both", []int64{s1, s2}, []time.Time{h(1), h(3)}, map[int64]bool{s1: true, s2: true}},
		{"one", []int64{s1, s2}, []time.Time{h(0), h(2)}, map[int64]bool{s1: true}},
		{"pairs, not across", []int64{s1, s2}, []time.Time{h(3), h(0)}, map[int64]bool{}},
		{"cleared", []int64{s2}, []time.Time{h(6)}, map[int64]bool{}},
		{"none asked", nil, nil, map[int64]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := db.FlaggedAt(t.Context(), tt.sensorIDs, tt.at)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("FlaggedAt = %v, want %v", got, tt.want)
			}
			for id := range tt.want {
				if !got[id] {
					t.Errorf("FlaggedAt = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestCountReadings(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	for _, m := range []int{0, 10, 20} {
		mustInsert(t, db, key, store.Reading{Time: flagBase.Add(time.Duration(m) * time.Minute), InputIDs: []int64{1}, Values: []float64{float64(m)}})
	}
	minute := func(n int) time.Time { return flagBase.Add(time.Duration(n) * time.Minute) }
	tests := []struct {
		name     string
		sensorID int64
		from, to time.Time
		want     int64
	}{
		{"all", key.SensorID, minute(0), minute(20), 3},
		{"bounds inclusive", key.SensorID, minute(10), minute(10), 1},
		{"part", key.SensorID, minute(5), minute(25), 2},
		{"none", key.SensorID, minute(21), minute(60), 0},
		{"other sensor", unknownID, minute(0), minute(20), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got int64
			err := db.InTx(t.Context(), func(tx *store.Tx) error {
				var err error
				got, err = tx.CountReadings(t.Context(), tt.sensorID, tt.from, tt.to)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("CountReadings = %d, want %d", got, tt.want)
			}
		})
	}
}

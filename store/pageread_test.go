package store_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestReadPage reads a sensor, its flags and its readings in one round
// trip: the readings a flag in force rejects whole are left out before
// the limit counts, unless asked for, as of now or of an instant; and a
// key that names another organization's sensor reads nothing of it, looked
// up or not.
func TestReadPage(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	mustInsert(t, db, key, one(1, 1), one(2, 2), one(3, 3), one(4, 4))
	var before time.Time
	err := db.InTx(ctx, func(tx *store.Tx) error {
		input := int64(1)
		set, err := tx.InsertFlags(ctx, key.SensorID, []store.FlagSpec{
			{Flag: store.Rejected, From: at(2), To: at(2), Reason: "frozen"},
			{Flag: store.Suspect, InputID: &input, From: at(3), To: at(4), Reason: "drift"},
			{Flag: store.Rejected, From: at(4), To: at(4), Reason: "cleared later"},
		})
		for _, f := range set {
			if f.SetAt.After(before) {
				before = f.SetAt // the instant they were all in force
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.ClearFlags(ctx, key.SensorID, nil, at(4), at(4), nil, "a mistake")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	read := func(t *testing.T, r store.PageRead) (sensor *store.Sensor, flags []string, readings string, err error) {
		t.Helper()
		var got []string
		err = db.ReadPage(ctx, r, func(s *store.Sensor, fl []store.Flag) error {
			sensor = s
			for _, f := range fl {
				flags = append(flags, f.Flag+" "+f.Reason)
			}
			return nil
		}, func(r *store.Reading) error {
			got = append(got, fmt.Sprint(r.Time.Minute()))
			return nil
		})
		return sensor, flags, strings.Join(got, " "), err
	}
	all := store.ReadingQuery{From: store.MinTime, To: store.MaxTime}
	tests := []struct {
		name         string
		read         store.PageRead
		wantReadings string
		wantFlags    int
	}{
		{"WithoutRejected", store.PageRead{Key: key, Lookup: true, Query: all}, "1 3 4", 2},
		{"LimitCountsTheOthers", store.PageRead{Key: key, Query: store.ReadingQuery{From: at(1), To: at(4), Limit: 2}}, "1 3", 2},
		{"Descending", store.PageRead{Key: key, Query: store.ReadingQuery{From: at(1), To: at(4), Desc: true, Limit: 2}}, "4 3", 2},
		{"Rejected", store.PageRead{Key: key, Query: all, Rejected: true}, "1 2 3 4", 2},
		{"AsOf", store.PageRead{Key: key, Query: all, AsOf: &before}, "1 3", 3},
		{"AsOfRejected", store.PageRead{Key: key, Query: all, AsOf: &before, Rejected: true}, "1 2 3 4", 3},
		{"Range", store.PageRead{Key: key, Query: store.ReadingQuery{From: at(3), To: at(4)}}, "3 4", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sensor, flags, readings, err := read(t, tt.read)
			if err != nil {
				t.Fatal(err)
			}
			if readings != tt.wantReadings || len(flags) != tt.wantFlags {
				t.Errorf("ReadPage = readings %q, flags %q; want readings %q and %d flags", readings, flags, tt.wantReadings, tt.wantFlags)
			}
			if looked := sensor != nil; looked != tt.read.Lookup || looked && sensor.ID != key.SensorID {
				t.Errorf("ReadPage gave sensor %+v; want it only when looked up, and the key's", sensor)
			}
		})
	}

	// Another organization's sensor, named in this one's path.
	other := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	beyond := store.SensorKey{OrgID: other.OrgID, ProjectID: other.ProjectID, SensorID: key.SensorID}
	t.Run("ErrNotFound", func(t *testing.T) {
		_, flags, readings, err := read(t, store.PageRead{Key: beyond, Lookup: true, Query: all, Rejected: true})
		wantCode(t, err, apperr.NotFound)
		if flags != nil || readings != "" {
			t.Errorf("ReadPage of a sensor beyond the key gave flags %q and readings %q, want none", flags, readings)
		}
	})
	t.Run("BeyondTheKeyReadsNothing", func(t *testing.T) {
		for _, rejected := range []bool{false, true} {
			_, flags, readings, err := read(t, store.PageRead{Key: beyond, Query: all, Rejected: rejected})
			if err != nil || flags != nil || readings != "" {
				t.Errorf("ReadPage(Rejected %v) of a sensor beyond the key = flags %q, readings %q, %v; want nothing", rejected, flags, readings, err)
			}
		}
	})
}

// TestReadPageHints reads pages with the hints that no flag is in force
// on the sensor, or none that rejects readings whole, of sensors that
// have such flags and of one that has none: a sensor's flags and its
// rejected readings left out are what they are all the same, read again,
// wherever its flags lie; each read says what flags the sensor has.
func TestReadPageHints(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	project := newProject(t, db, newOrg(t, db))
	rejecting, suspect, plain := newSensor(t, db, project, nil), newSensor(t, db, project, nil), newSensor(t, db, project, nil)
	for _, key := range []store.SensorKey{rejecting, suspect, plain} {
		mustInsert(t, db, key, one(1, 1), one(2, 2), one(3, 3), one(4, 4))
	}
	input := int64(1)
	flags := map[store.SensorKey][]store.FlagSpec{
		rejecting: {{Flag: store.Rejected, From: at(2), To: at(2), Reason: "frozen"}, {Flag: store.Suspect, InputID: &input, From: at(3), To: at(3), Reason: "drift"}},
		suspect:   {{Flag: store.Suspect, InputID: &input, From: at(3), To: at(3), Reason: "drift"}},
	}
	for key, specs := range flags {
		err := db.InTx(ctx, func(tx *store.Tx) error {
			_, err := tx.InsertFlags(ctx, key.SensorID, specs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	all := store.ReadingQuery{From: store.MinTime, To: store.MaxTime}
	type hints struct{ unflagged, noneRejected bool }
	tests := []struct {
		name         string
		key          store.SensorKey
		q            store.ReadingQuery
		wantReadings string
		wantFlags    int
		wantFlagged  [2]bool // flagged, rejecting
	}{
		{"Rejecting", rejecting, all, "1 3 4", 2, [2]bool{true, true}},
		{"RejectingLimit", rejecting, store.ReadingQuery{From: at(1), To: at(4), Limit: 2}, "1 3", 2, [2]bool{true, true}},
		{"RejectingElsewhere", rejecting, store.ReadingQuery{From: at(3), To: at(4)}, "3 4", 1, [2]bool{true, true}},
		{"Suspect", suspect, all, "1 2 3 4", 1, [2]bool{true, false}},
		{"Plain", plain, all, "1 2 3 4", 0, [2]bool{false, false}},
	}
	for _, h := range []hints{{false, true}, {true, false}, {true, true}} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/Unflagged=%t/NoneRejected=%t", tt.name, h.unflagged, h.noneRejected), func(t *testing.T) {
				var (
					got     []string
					nFlags  int
					flagged *[2]bool
				)
				r := store.PageRead{Key: tt.key, Lookup: true, Query: tt.q, Unflagged: h.unflagged, NoneRejected: h.noneRejected,
					Flagged: func(f, r bool) { flagged = &[2]bool{f, r} }}
				err := db.ReadPage(ctx, r, func(s *store.Sensor, fl []store.Flag) error {
					if s == nil || s.ID != tt.key.SensorID {
						t.Errorf("ReadPage gave sensor %+v, want the key's", s)
					}
					nFlags = len(fl)
					return nil
				}, func(r *store.Reading) error {
					got = append(got, fmt.Sprint(r.Time.Minute()))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if readings := strings.Join(got, " "); readings != tt.wantReadings || nFlags != tt.wantFlags {
					t.Errorf("ReadPage = readings %q, %d flags; want %q, %d", readings, nFlags, tt.wantReadings, tt.wantFlags)
				}
				if flagged == nil || *flagged != tt.wantFlagged {
					t.Errorf("ReadPage said flagged and rejecting %v, want %v", flagged, tt.wantFlagged)
				}
			})
		}
	}
}

// TestReadingsOfOtherInputSets reads the readings of a sensor whose
// readings change input sets from one to the next, and whose set of input
// ids grows mid-page, then is overwritten with others: each reading comes
// with its own input ids, whether or not they are the sensor's set,
// which the statements send once and the readings only when they differ.
func TestReadingsOfOtherInputSets(t *testing.T) {
	pool := storetest.NewPool(t)
	db := store.New(pool)
	ctx := t.Context()
	// The same rows in PostgreSQL's text format, which pgx scans.
	config := pool.Config()
	config.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	textPool, err := pgxpool.NewWithConfig(ctx, config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(textPool.Close)
	texts := store.New(textPool)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	reading := func(minute int, ids ...int64) store.Reading {
		r := store.Reading{Time: at(minute), InputIDs: ids}
		for _, id := range ids {
			r.Values = append(r.Values, float64(minute)+float64(id)/10)
		}
		return r
	}
	mustInsert(t, db, key, reading(1, 1, 2, 3), reading(2, 1, 3), reading(3, 1, 2, 3))
	mustInsert(t, db, key, reading(4, 1, 2, 3, 4), reading(5, 4), reading(6, 1, 2, 3, 4), reading(7, 2, 3, 4), reading(8, 1, 2, 3))
	// Overwrites that bring a new id, and take one away.
	mustInsert(t, db, key, reading(3, 1, 2, 3, 4, 5), reading(4, 1, 2, 3, 4, 5), reading(6, 1, 2, 3), reading(7, 1, 2, 3, 4, 5), reading(9, 1, 2, 3, 4, 5))
	stored := []store.Reading{
		reading(1, 1, 2, 3), reading(2, 1, 3), reading(3, 1, 2, 3, 4, 5), reading(4, 1, 2, 3, 4, 5), reading(5, 4),
		reading(6, 1, 2, 3), reading(7, 1, 2, 3, 4, 5), reading(8, 1, 2, 3), reading(9, 1, 2, 3, 4, 5),
	}
	reversed := func(rs []store.Reading) []store.Reading {
		rs = slices.Clone(rs)
		slices.Reverse(rs)
		return rs
	}
	show := func(rs []store.Reading) string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%d:%v=%v", r.Time.Minute(), r.InputIDs, r.Values))
		}
		return strings.Join(out, " ")
	}
	keep := func(got *[]store.Reading) func(*store.Reading) error {
		return func(r *store.Reading) error {
			*got = append(*got, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
			return nil
		}
	}
	tests := []struct {
		name string
		q    store.ReadingQuery
		want []store.Reading
	}{
		{"All", store.ReadingQuery{From: store.MinTime, To: store.MaxTime}, stored},
		{"Page", store.ReadingQuery{From: at(2), To: store.MaxTime, Limit: 5}, stored[1:6]},
		{"Offset", store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 3, Offset: 4}, stored[4:7]},
		{"Descending", store.ReadingQuery{From: store.MinTime, To: at(8), Desc: true, Limit: 6}, reversed(stored[2:8])},
		{"Without", store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Without: [][2]time.Time{{at(2), at(5)}}},
			append(slices.Clone(stored[:1]), stored[5:]...)},
		{"None", store.ReadingQuery{From: at(10), To: store.MaxTime}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for format, db := range map[string]*store.DB{"binary": db, "text": texts} {
				var listed []store.Reading
				if err := db.ListReadings(ctx, store.Sensor{ID: key.SensorID}, tt.q, keep(&listed)); err != nil {
					t.Fatal(err)
				}
				if got, want := show(listed), show(tt.want); got != want {
					t.Errorf("ListReadings, %s = %s\nwant %s", format, got, want)
				}
			}
			if tt.q.Without != nil {
				return // ReadPage leaves out what flags reject
			}
			for _, lookup := range []bool{false, true} {
				var paged []store.Reading
				read := store.PageRead{Key: key, Lookup: lookup, Query: tt.q, Rejected: !lookup, Unflagged: lookup}
				if err := db.ReadPage(ctx, read, func(*store.Sensor, []store.Flag) error { return nil }, keep(&paged)); err != nil {
					t.Fatal(err)
				}
				if got, want := show(paged), show(tt.want); got != want {
					t.Errorf("ReadPage(Lookup %v) = %s\nwant %s", lookup, got, want)
				}
			}
		})
	}
}

// TestReadPageInstance reads, page after page, the sensor of a page
// whose stored instance's JSON changes in every way the column can: each
// page has the sensor and the instance the row holds then, as GetSensor
// reads and decodes them, also when
// a write gives another content the same version (the kept decoding is
// keyed on the JSON, not the version), and a change the caller makes to
// a page's instance is not seen by the next page.
func TestReadPageInstance(t *testing.T) {
	pool := storetest.NewPool(t)
	db := store.New(pool)
	ctx := t.Context()
	_, key := newBlueprintSensor(t, db)
	plain := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	read := func(t *testing.T, key store.SensorKey) store.Sensor {
		t.Helper()
		var got store.Sensor
		err := db.ReadPage(ctx, store.PageRead{Key: key, Lookup: true, Query: store.ReadingQuery{From: store.MinTime, To: store.MaxTime}},
			func(s *store.Sensor, _ []store.Flag) error {
				got = *s
				return nil
			}, func(*store.Reading) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	set := func(sql string) func(t *testing.T) {
		return func(t *testing.T) {
			if _, err := pool.Exec(ctx, `UPDATE sensors SET instance = `+sql+`, updated_at = clock_timestamp() WHERE id = $1`, key.SensorID); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name   string
		before func(t *testing.T)
	}{
		{"First", func(*testing.T) {}},
		{"Again", func(*testing.T) {}},
		{"ChangedByTheCaller", func(t *testing.T) {
			inst := read(t, key).Instance
			inst.Outputs[0].Formula, inst.Inputs[0].Key, inst.Version = "u", "v", 99
		}},
		{"SameVersionOtherFormula", set(`jsonb_set(instance, '{outputs,0,formula}', '"u * i"')`)},
		{"SameVersionOtherInputs", set(`jsonb_set(instance, '{inputs}', (instance->'inputs') - 1)`)},
		{"VersionRestarted", set(`jsonb_set(instance, '{version}', '1')`)},
		{"Null", set(`NULL`)},
		{"Back", set(`jsonb_build_object('version', 1, 'inputs', '[{"id": 7, "key": "h", "name": "head", "unit": "m"}]'::jsonb,
			'outputs', '[{"id": 8, "key": "q", "name": "flow", "unit": "l/s", "formula": "h * 2"}]'::jsonb, 'constants', '[]'::jsonb)`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.before(t)
			for _, key := range []store.SensorKey{key, plain} {
				got, want := read(t, key), getSensor(t, db, key)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("ReadPage's sensor %d = %+v with instance %+v, want %+v with %+v", key.SensorID, got, got.Instance, want, want.Instance)
				}
			}
		})
	}
}

package store_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestSensorLinks tests links.go: setting links, the refusals, and the
// deletion of a sensor with dependants.
func TestSensorLinks(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"SetSensorLinks": testSetSensorLinks,
		"DeleteSource":   testDeleteSource,
	})
}

// linkedProject creates a project of n sensors of testBlueprint.
func linkedProject(t *testing.T, db *store.DB, n int) (store.Project, []store.SensorKey) {
	t.Helper()
	org := newOrg(t, db)
	b := newBlueprint(t, db, org.ID)
	project := newProject(t, db, org)
	keys := make([]store.SensorKey, n)
	for i := range keys {
		keys[i] = newSensor(t, db, project, &b)
	}
	return project, keys
}

// link links input u of sensor to output p of source.
func link(t *testing.T, db *store.DB, sensor, source store.SensorKey) error {
	t.Helper()
	_, err := setSensorLinks(t.Context(), db, sensor, map[string]store.InputLink{"u": {SensorID: source.SensorID, Key: "p", Staleness: time.Hour}})
	return err
}

func testSetSensorLinks(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		_, keys := linkedProject(t, db, 2)
		before := getSensor(t, db, keys[0])
		got, err := setSensorLinks(t.Context(), db, keys[0], map[string]store.InputLink{"i": {SensorID: keys[1].SensorID, Key: "u", Staleness: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		if l := got.Instance.Inputs[1].Link; l == nil || *l != (store.InputLink{SensorID: keys[1].SensorID, Key: "u", Staleness: time.Minute}) {
			t.Errorf("input i's link = %v, want sensor %d's u within a minute", l, keys[1].SensorID)
		}
		if got.Instance.Inputs[0].Link != nil {
			t.Errorf("input u's link = %v, want none", got.Instance.Inputs[0].Link)
		}
		if got, want := got.Instance.Version, before.Instance.Version+1; got != want {
			t.Errorf("Version = %d, want %d", got, want)
		}
		stored := getSensor(t, db, keys[0])
		if l := stored.Instance.Inputs[1].Link; l == nil || l.Staleness != time.Minute {
			t.Errorf("stored link = %v, want one of a minute", l)
		}
		// An empty set removes them.
		got, err = setSensorLinks(t.Context(), db, keys[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Instance.Inputs[1].Link != nil {
			t.Errorf("link after removal = %v, want none", got.Instance.Inputs[1].Link)
		}
	})
	t.Run("Chain", func(t *testing.T) {
		t.Parallel()
		_, keys := linkedProject(t, db, store.MaxLinkChain+2)
		for i := 0; i < store.MaxLinkChain; i++ {
			if err := link(t, db, keys[i], keys[i+1]); err != nil {
				t.Fatalf("link %d: %v", i, err)
			}
		}
		err := link(t, db, keys[store.MaxLinkChain], keys[store.MaxLinkChain+1])
		wantCode(t, err, apperr.Invalid)
		if !strings.Contains(err.Error(), "links") {
			t.Errorf("err = %v, want it to name the chain's length", err)
		}
	})
	t.Run("ErrCycle", func(t *testing.T) {
		t.Parallel()
		_, keys := linkedProject(t, db, 3)
		for _, pair := range [][2]int{{0, 1}, {1, 2}} {
			if err := link(t, db, keys[pair[0]], keys[pair[1]]); err != nil {
				t.Fatal(err)
			}
		}
		err := link(t, db, keys[2], keys[0])
		wantCode(t, err, apperr.Invalid)
		for _, k := range keys {
			if !strings.Contains(err.Error(), " "+strconv.FormatInt(k.SensorID, 10)+" (meter)") {
				t.Errorf("err = %v, want it to name sensor %d", err, k.SensorID)
			}
		}
		wantCode(t, link(t, db, keys[0], keys[0]), apperr.Invalid)
	})
	t.Run("ErrNotFound/AnotherProject", func(t *testing.T) {
		t.Parallel()
		_, keys := linkedProject(t, db, 1)
		_, others := linkedProject(t, db, 1)
		wantCode(t, link(t, db, keys[0], others[0]), apperr.NotFound)
	})
	t.Run("ErrNotFound/Sensor", func(t *testing.T) {
		t.Parallel()
		project, keys := linkedProject(t, db, 1)
		wantCode(t, link(t, db, store.SensorKey{OrgID: project.OrgID, ProjectID: project.ID, SensorID: unknownID}, keys[0]), apperr.NotFound)
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		t.Parallel()
		_, keys := linkedProject(t, db, 2)
		for name, links := range map[string]map[string]store.InputLink{
			"UnknownInput":     {"x": {SensorID: keys[1].SensorID, Key: "p", Staleness: time.Hour}},
			"UnknownSourceKey": {"u": {SensorID: keys[1].SensorID, Key: "x", Staleness: time.Hour}},
			"NoStaleness":      {"u": {SensorID: keys[1].SensorID, Key: "p"}},
			"StalenessTooLong": {"u": {SensorID: keys[1].SensorID, Key: "p", Staleness: store.MaxStaleness + time.Microsecond}},
		} {
			_, err := setSensorLinks(t.Context(), db, keys[0], links)
			if got := apperr.CodeOf(err); got != apperr.Invalid {
				t.Errorf("%s: err = %v, want Invalid", name, err)
			}
		}
	})
	t.Run("ErrConflict/NoBlueprint", func(t *testing.T) {
		t.Parallel()
		project, keys := linkedProject(t, db, 1)
		plain := newSensor(t, db, project, nil)
		wantCode(t, link(t, db, plain, keys[0]), apperr.Conflict)
	})
}

func testDeleteSource(t *testing.T, db *store.DB) {
	_, keys := linkedProject(t, db, 3)
	for _, dependant := range keys[1:] {
		if err := link(t, db, dependant, keys[0]); err != nil {
			t.Fatal(err)
		}
	}
	err := db.DeleteSensor(t.Context(), keys[0])
	wantCode(t, err, apperr.Conflict)
	for _, k := range keys[1:] {
		if !strings.Contains(err.Error(), strconv.FormatInt(k.SensorID, 10)+" (meter)") {
			t.Errorf("err = %v, want it to list sensor %d", err, k.SensorID)
		}
	}
	for _, dependant := range keys[1:] {
		if _, err := setSensorLinks(t.Context(), db, dependant, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DeleteSensor(t.Context(), keys[0]); err != nil {
		t.Fatalf("DeleteSensor once the links are gone: %v", err)
	}
}

// TestLinkReadings reads a link's source and its readings, on the pool
// and in a transaction alike: the source must be a sensor of the same
// project; the readings start at the latest one at or before First, no
// older than From, that carries the input asked for, and run to To;
// those a flag in force rejects for the link are left out, the latest
// one included, and the flags are given first.
func TestLinkReadings(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	project, keys := linkedProject(t, db, 2)
	dependant, source := getSensor(t, db, keys[0]), getSensor(t, db, keys[1])
	u := source.Instance.Inputs[0].ID
	at := func(m int) time.Time { return time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC) }
	mustInsert(t, db, keys[1],
		store.Reading{Time: at(0), InputIDs: []int64{u}, Values: []float64{1}},
		store.Reading{Time: at(5), InputIDs: []int64{u + 1}, Values: []float64{2}}, // without u
		store.Reading{Time: at(10), InputIDs: []int64{u}, Values: []float64{3}},
		store.Reading{Time: at(20), InputIDs: []int64{u}, Values: []float64{4}})
	other := newSensor(t, db, newProject(t, db, store.Org{ID: project.OrgID}), nil)

	var flags []store.Flag
	list := func(r interface {
		ListLinkReadings(context.Context, store.Sensor, store.LinkQuery, func([]store.Flag) error, func(*store.Reading) error) error
	}, q store.LinkQuery) []int {
		t.Helper()
		var minutes []int
		if err := r.ListLinkReadings(ctx, source, q, func(f []store.Flag) error { flags = f; return nil }, func(r *store.Reading) error {
			minutes = append(minutes, r.Time.Minute())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return minutes
	}
	check := func(t *testing.T, r interface {
		LinkSource(context.Context, store.Sensor, int64) (store.Sensor, error)
		ListLinkReadings(context.Context, store.Sensor, store.LinkQuery, func([]store.Flag) error, func(*store.Reading) error) error
	}) {
		got, err := r.LinkSource(ctx, dependant, source.ID)
		if err != nil || got.ID != source.ID || got.Instance == nil {
			t.Fatalf("LinkSource = %+v, %v; want sensor %d with its instance", got, err, source.ID)
		}
		_, err = r.LinkSource(ctx, dependant, other.SensorID)
		wantCode(t, err, apperr.NotFound)
		for _, tt := range []struct {
			name string
			q    store.LinkQuery
			want []int
		}{
			{"FromTheOneServingFirst", store.LinkQuery{From: at(0), First: at(7), To: at(30)}, []int{5, 10, 20}},
			{"ThatCarriesTheInput", store.LinkQuery{From: at(0), First: at(7), To: at(30), InputID: u}, []int{0, 5, 10, 20}},
			{"NoOlderThanFrom", store.LinkQuery{From: at(6), First: at(7), To: at(15), InputID: u}, []int{10}},
		} {
			if got := list(r, tt.q); !slices.Equal(got, tt.want) {
				t.Errorf("%s: minutes %v, want %v", tt.name, got, tt.want)
			}
		}
	}
	t.Run("DB", func(t *testing.T) { check(t, db) })
	t.Run("Tx", func(t *testing.T) {
		if err := db.InTx(ctx, func(tx *store.Tx) error { check(t, tx); return nil }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("Flagged", func(t *testing.T) {
		before := time.Now()
		setFlag(t, db, source.ID, store.FlagSpec{Flag: store.Rejected, From: at(10), To: at(10), Reason: "spike"})
		setFlag(t, db, source.ID, store.FlagSpec{InputID: &u, Flag: store.Rejected, From: at(0), To: at(0), Reason: "logger swapped"})
		setFlag(t, db, source.ID, store.FlagSpec{Flag: store.Suspect, From: at(20), To: at(20), Reason: "check"})
		for _, tt := range []struct {
			name  string
			q     store.LinkQuery
			want  []int
			flags int
		}{
			{"RejectedWholeLeftOut", store.LinkQuery{From: at(0), First: at(12), To: at(30)}, []int{5, 20}, 3},
			{"RejectedInputLeftOut", store.LinkQuery{From: at(0), First: at(7), To: at(30), InputID: u}, []int{20}, 3},
			{"OutputKeepsRejectedInput", store.LinkQuery{From: at(0), First: at(3), To: at(30)}, []int{0, 5, 20}, 3},
			{"OtherInputRejected", store.LinkQuery{From: at(0), First: at(3), To: at(30), InputID: u + 1}, []int{5, 20}, 3},
			{"AsOfBefore", store.LinkQuery{From: at(0), First: at(12), To: at(30), AsOf: &before}, []int{10, 20}, 0},
		} {
			if got := list(db, tt.q); !slices.Equal(got, tt.want) || len(flags) != tt.flags {
				t.Errorf("%s: minutes %v, %d flags; want %v, %d", tt.name, got, len(flags), tt.want, tt.flags)
			}
		}
	})
	if dependant.Instance.Linked() {
		t.Error("a sensor without links is Linked")
	}
	if err := link(t, db, keys[0], keys[1]); err != nil {
		t.Fatal(err)
	}
	if !getSensor(t, db, keys[0]).Instance.Linked() {
		t.Error("a sensor with a link is not Linked")
	}
	var none *store.Instance
	if none.Linked() {
		t.Error("no instance is Linked")
	}
}

// TestReadPageLinks reads, with a page of a linked sensor, its link's
// source and the source's readings that ListLinkReadings reads over the
// page's first and last instants, the links as the sensor has them or as
// given; at most the bound, beyond which the link is incomplete; and
// nothing for a key that names another organization's sensor.
func TestReadPageLinks(t *testing.T) {
	db := newDB(t)
	ctx := t.Context()
	_, keys := linkedProject(t, db, 2)
	if err := link(t, db, keys[0], keys[1]); err != nil {
		t.Fatal(err)
	}
	dependant, source := getSensor(t, db, keys[0]), getSensor(t, db, keys[1])
	at := func(m int) time.Time { return time.Date(2024, 5, 1, 12, m, 0, 0, time.UTC) }
	u := source.Instance.Inputs[0].ID
	for _, m := range []int{0, 5, 10, 20} {
		mustInsert(t, db, keys[1], store.Reading{Time: at(m), InputIDs: []int64{u}, Values: []float64{float64(m)}})
	}
	for _, m := range []int{7, 12, 15, 30} {
		mustInsert(t, db, keys[0], store.Reading{Time: at(m), InputIDs: []int64{dependant.Instance.Inputs[1].ID}, Values: []float64{1}})
	}
	other := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	beyond := store.SensorKey{OrgID: other.OrgID, ProjectID: other.ProjectID, SensorID: keys[0].SensorID}

	read := func(t *testing.T, r store.PageRead) (got store.LinkedPage) {
		t.Helper()
		r.Links = func(p store.LinkedPage) error {
			got = p
			return nil
		}
		if err := db.ReadPage(ctx, r, func(*store.Sensor, []store.Flag) error { return nil }, func(*store.Reading) error { return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// The page: minutes 7, 12 and 15.
	page := store.ReadingQuery{From: store.MinTime, To: at(29), Limit: 1000}
	want := store.LinkQuery{From: at(7).Add(-time.Hour), First: at(7), To: at(15)}
	var wantMinutes []int
	if err := db.ListLinkReadings(ctx, source, want, func([]store.Flag) error { return nil }, func(r *store.Reading) error {
		wantMinutes = append(wantMinutes, r.Time.Minute())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(wantMinutes) != "[5 10]" {
		t.Fatalf("ListLinkReadings = minutes %v, want [5 10]", wantMinutes)
	}
	tests := []struct {
		name     string
		read     store.PageRead
		complete bool
	}{
		{"Lookup", store.PageRead{Key: keys[0], Lookup: true, Query: page, LinkReadings: 2}, true},
		{"Given", store.PageRead{Key: keys[0], Query: page, LinksOf: dependant.Instance, LinkReadings: 2}, true},
		{"Descending", store.PageRead{Key: keys[0], Lookup: true, Query: store.ReadingQuery{From: store.MinTime, To: at(29), Limit: 1000, Desc: true}, LinkReadings: 2}, true},
		{"Bounded", store.PageRead{Key: keys[0], Lookup: true, Query: page, LinkReadings: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := read(t, tt.read)
			if len(got.Links) != 1 {
				t.Fatalf("links %+v, want one", got.Links)
			}
			l := got.Links[0]
			if l.Known || l.Source == nil || l.Source.Version != source.Instance.Version || len(l.Source.Outputs) != len(source.Instance.Outputs) {
				t.Errorf("link's source known %v, instance %+v; want sensor %d's instance", l.Known, l.Source, source.ID)
			}
			var minutes []int
			for _, r := range l.Readings {
				minutes = append(minutes, r.Time.Minute())
			}
			wantReadings := wantMinutes
			if !tt.complete {
				wantReadings = wantMinutes[:1]
			}
			if l.Input != 0 || l.SensorID != source.ID || !l.Query.From.Equal(want.From) || !l.Query.First.Equal(want.First) || !l.Query.To.Equal(want.To) || l.Query.InputID != 0 ||
				l.Complete != tt.complete || fmt.Sprint(minutes) != fmt.Sprint(wantReadings) {
				t.Errorf("link %+v, readings at minutes %v; want input 0 of sensor %d, query %+v, complete %v, minutes %v", l, minutes, source.ID, want, tt.complete, wantReadings)
			}
		})
	}
	// A flag that rejects a value the link may take leaves the link
	// incomplete and without readings, in the statement's own snapshot:
	// the caller reads it with the source's flags. One beyond the
	// readings the link may take, or not in force as of the read, does
	// not.
	t.Run("RejectedAtTheSource", func(t *testing.T) {
		before := time.Now()
		setFlag(t, db, source.ID, store.FlagSpec{Flag: store.Rejected, From: at(20), To: at(20), Reason: "beyond the page"})
		if l := read(t, tests[0].read).Links; len(l) != 1 || !l[0].Complete {
			t.Errorf("a flag beyond the page: links %+v, want one complete", l)
		}
		setFlag(t, db, source.ID, store.FlagSpec{InputID: &u, Flag: store.Rejected, From: at(5), To: at(5), Reason: "spike"})
		for _, r := range []store.PageRead{tests[0].read, tests[1].read, {Key: keys[0], Query: page, LinksOf: dependant.Instance, LinkReadings: 2, Rejected: true}} {
			if l := read(t, r).Links; len(l) != 1 || l[0].Complete || len(l[0].Readings) != 0 {
				t.Errorf("a flag on an input of the page's source reading: links %+v, want one incomplete, without readings", l)
			}
		}
		asOf := tests[1].read
		asOf.AsOf = &before
		if l := read(t, asOf).Links; len(l) != 1 || !l[0].Complete || len(l[0].Readings) != 2 {
			t.Errorf("as of before the flags: links %+v, want one complete, with two readings", l)
		}
	})
	// A source's instance comes unless the read names the version it
	// has; any other version of it, known or not, comes.
	t.Run("KnownSources", func(t *testing.T) {
		v := source.Instance.Version
		for _, tt := range []struct {
			name  string
			known map[int64]int64
			want  bool
		}{
			{"ThatVersion", map[int64]int64{source.ID: v}, true},
			{"AnotherVersion", map[int64]int64{source.ID: v + 1}, false},
			{"AnotherSensor", map[int64]int64{dependant.ID: v}, false},
		} {
			for _, r := range []store.PageRead{tests[0].read, tests[1].read} {
				r.KnownSources = tt.known
				l := read(t, r).Links
				if len(l) != 1 || l[0].Known != tt.want || (l[0].Source == nil) != tt.want {
					t.Errorf("%s: links %+v, want one, known %v", tt.name, l, tt.want)
				}
			}
		}
	})
	t.Run("BeyondTheKeyReadsNothing", func(t *testing.T) {
		for _, r := range []store.PageRead{{Key: beyond, Query: page, LinksOf: dependant.Instance}, {Key: beyond, Query: page, LinksOf: dependant.Instance, Rejected: true}} {
			if got := read(t, r); len(got.Links) != 0 {
				t.Errorf("ReadPage of a sensor beyond the key read links %+v", got)
			}
		}
	})
}

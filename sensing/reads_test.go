package sensing_test

import (
	"cmp"
	"strconv"
	"strings"
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

// TestPageLinkHints reads pages with outputs of a sensor without links,
// then linked, then unlinked again: once a read has found it without
// links, its pages leave out the statement of its links' readings;
// once linked, the first page has them read after it, and the same
// outputs as every page after it, which has them again.
func TestPageLinkHints(t *testing.T) {
	core, db, tracer := newCountedService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	dep, key := newDependant(t, db, f)
	// The source's u is 3 and the dependant's 1, so p = u·i·2 is 6 once
	// the dependant's i is the source's u, and missing before.
	var source, own []store.Reading
	for n := range 5 {
		source = append(source, store.Reading{Time: minute(n), InputIDs: []int64{f.u(), f.i()}, Values: []float64{3, 1}})
		own = append(own, store.Reading{Time: minute(n), InputIDs: []int64{dep.Instance.Inputs[0].ID}, Values: []float64{1}})
	}
	for k, readings := range map[store.SensorKey][]store.Reading{f.key: source, key: own} {
		if _, err := core.Ingest(ctx, k, sensing.NewBatch(readings)); err != nil {
			t.Fatal(err)
		}
	}
	page := func(t *testing.T, p string, rounds, statements int64) {
		t.Helper()
		sink := &outputSink{}
		q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000}
		n, queries := tracer.n.Load(), tracer.queries.Load()
		if err := core.ListReadings(ctx, key, q, sensing.ReadOptions{Outputs: true}, sink); err != nil {
			t.Fatal(err)
		}
		if got, want := tracer.n.Load()-n, rounds; got != want {
			t.Errorf("%d round trips, want %d", got, want)
		}
		if got, want := tracer.queries.Load()-queries, statements; got != want {
			t.Errorf("%d statements, want %d", got, want)
		}
		for i, got := range sink.got {
			if want := minute(i).Format("15:04:05") + " " + p; got != want {
				t.Errorf("reading %d: %s, want %s", i, got, want)
			}
		}
		if len(sink.got) != len(own) {
			t.Errorf("%d readings, want %d", len(sink.got), len(own))
		}
	}
	link := func(t *testing.T, links map[string]store.InputLink) {
		t.Helper()
		if _, err := core.SetLinks(ctx, key, links); err != nil {
			t.Fatal(err)
		}
	}
	// Never read: the sensor, its flags, its links with their sources'
	// readings, its readings.
	t.Run("FirstRead", func(t *testing.T) { page(t, "-", 1, 4) })
	// Found without links nor flags: the sensor and its readings.
	t.Run("Unlinked", func(t *testing.T) { page(t, "-", 1, 2) })
	t.Run("LinkedSince", func(t *testing.T) {
		link(t, map[string]store.InputLink{"i": {SensorID: f.key.SensorID, Key: "u", Staleness: time.Minute}})
		page(t, "6", 3, 5) // the page, then the source, and its flags and readings
	})
	// Found without flags too: all but the flags.
	t.Run("Linked", func(t *testing.T) { page(t, "6", 1, 3) })
	t.Run("UnlinkedSince", func(t *testing.T) {
		link(t, map[string]store.InputLink{})
		page(t, "-", 1, 3)
	})
	t.Run("UnlinkedAgain", func(t *testing.T) { page(t, "-", 1, 2) })
}

// TestPageRejectHints reads pages of a sensor before and after a flag
// rejects one of its readings whole, and after the flag is cleared: once
// a read has found no flag in force, the next reads neither the flags nor
// checks its readings against them, but a read that starts after the
// flag is set leaves the reading out all the same, reading the flags and
// the page again, and the reads after it read and check them in the
// page's round trip until a read finds the flag cleared.
func TestPageRejectHints(t *testing.T) {
	core, db, tracer := newCountedService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	readings := make([]store.Reading, 5)
	for n := range readings {
		readings[n] = store.Reading{Time: minute(n), InputIDs: []int64{f.u(), f.i()}, Values: []float64{float64(n), 1}}
	}
	if _, err := core.Ingest(ctx, f.key, sensing.NewBatch(readings)); err != nil {
		t.Fatal(err)
	}
	user, err := db.EnsureUser(ctx, "ada@example.com", "ada")
	if err != nil {
		t.Fatal(err)
	}
	page := func(t *testing.T, want string, rounds int64) {
		t.Helper()
		sink := &outputSink{}
		q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000}
		n := tracer.n.Load()
		if err := core.ListReadings(ctx, f.key, q, sensing.ReadOptions{Outputs: true}, sink); err != nil {
			t.Fatal(err)
		}
		if got := tracer.n.Load() - n; got != rounds {
			t.Errorf("%d round trips, want %d", got, rounds)
		}
		var got []string
		for _, r := range sink.got {
			got = append(got, r[3:5]) // the minute
		}
		if got := strings.Join(got, " "); got != want {
			t.Errorf("minutes %s, want %s", got, want)
		}
	}
	edit := sensing.FlagEdit{From: minute(3), To: minute(3), Reason: "frozen", By: user.ID}
	t.Run("FirstRead", func(t *testing.T) { page(t, "00 01 02 03 04", 1) })
	t.Run("Unflagged", func(t *testing.T) { page(t, "00 01 02 03 04", 1) })
	t.Run("FlaggedSince", func(t *testing.T) {
		edit.Flag = store.Rejected
		if _, err := core.SetFlag(ctx, f.key, edit); err != nil {
			t.Fatal(err)
		}
		page(t, "00 01 02 04", 2) // read again, checked
	})
	t.Run("Flagged", func(t *testing.T) { page(t, "00 01 02 04", 1) })
	t.Run("ClearedSince", func(t *testing.T) {
		edit.Flag = ""
		if _, err := core.ClearFlags(ctx, f.key, edit); err != nil {
			t.Fatal(err)
		}
		page(t, "00 01 02 03 04", 1)
	})
	t.Run("Cleared", func(t *testing.T) { page(t, "00 01 02 03 04", 1) })
}

// TestPageLinkFlagHints reads pages with outputs of a sensor whose input
// i takes a source's u before and after flags reject its readings: once
// a read has found no flag in force, the next reads neither its flags
// nor checks its readings against them, links and all, but a read that
// starts after a flag is set, on a whole reading or on one input, leaves
// out what the flag rejects all the same, reading the flags, the links
// and the page again.
func TestPageLinkFlagHints(t *testing.T) {
	core, db, tracer := newCountedService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	dep, key := newDependant(t, db, f)
	if _, err := core.SetLinks(ctx, key, map[string]store.InputLink{"i": {SensorID: f.key.SensorID, Key: "u", Staleness: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	// The source's u is n+1 at minute n and the dependant's u 1, so the
	// dependant's p = u·i·2 is 2(n+1).
	var source, own []store.Reading
	for n := range 5 {
		source = append(source, store.Reading{Time: minute(n), InputIDs: []int64{f.u(), f.i()}, Values: []float64{float64(n + 1), 1}})
		own = append(own, store.Reading{Time: minute(n), InputIDs: []int64{dep.Instance.Inputs[0].ID}, Values: []float64{1}})
	}
	for k, readings := range map[store.SensorKey][]store.Reading{f.key: source, key: own} {
		if _, err := core.Ingest(ctx, k, sensing.NewBatch(readings)); err != nil {
			t.Fatal(err)
		}
	}
	user, err := db.EnsureUser(ctx, "ada@example.com", "ada")
	if err != nil {
		t.Fatal(err)
	}
	page := func(t *testing.T, want string, rounds, statements int64) {
		t.Helper()
		sink := &outputSink{}
		q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000}
		n, queries := tracer.n.Load(), tracer.queries.Load()
		if err := core.ListReadings(ctx, key, q, sensing.ReadOptions{Outputs: true}, sink); err != nil {
			t.Fatal(err)
		}
		if got := tracer.n.Load() - n; got != rounds {
			t.Errorf("%d round trips, want %d", got, rounds)
		}
		if got := tracer.queries.Load() - queries; got != statements {
			t.Errorf("%d statements, want %d", got, statements)
		}
		var got []string
		for _, r := range sink.got {
			got = append(got, r[3:5]+":"+r[9:]) // the minute and p
		}
		if got := strings.Join(got, " "); got != want {
			t.Errorf("minute:p %s, want %s", got, want)
		}
	}
	const all = "00:2 01:4 02:6 03:8 04:10"
	flag := func(t *testing.T, flag, input string, m int) {
		t.Helper()
		edit := sensing.FlagEdit{Flag: flag, From: minute(m), To: minute(m), Input: input, Reason: "frozen", By: user.ID}
		var err error
		if flag == "" {
			_, err = core.ClearFlags(ctx, key, edit)
		} else {
			_, err = core.SetFlag(ctx, key, edit)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Never read: the sensor, its flags, its links with their sources'
	// readings, its readings.
	t.Run("FirstRead", func(t *testing.T) { page(t, all, 1, 4) })
	// Found without flags: all but the flags.
	t.Run("Unflagged", func(t *testing.T) { page(t, all, 1, 3) })
	// Then read again, checked: the flags, the links and the readings.
	t.Run("RejectedSince", func(t *testing.T) {
		flag(t, store.Rejected, "", 0)
		page(t, "01:4 02:6 03:8 04:10", 2, 6)
	})
	t.Run("Rejected", func(t *testing.T) { page(t, "01:4 02:6 03:8 04:10", 1, 4) })
	t.Run("ClearedSince", func(t *testing.T) {
		flag(t, "", "", 0)
		page(t, all, 1, 4)
	})
	t.Run("Cleared", func(t *testing.T) { page(t, all, 1, 3) })
	// Its own u rejected at minute 2: no p there.
	t.Run("InputRejectedSince", func(t *testing.T) {
		flag(t, store.Rejected, "u", 2)
		page(t, "00:2 01:4 02:- 03:8 04:10", 2, 6)
	})
	t.Run("InputRejected", func(t *testing.T) { page(t, "00:2 01:4 02:- 03:8 04:10", 1, 4) })
}

// TestPageLinkSpanHints reads pages of 3 readings with outputs of a
// sensor whose input i takes a source's u: once a full page has shown
// how far apart its readings are, the next has its links' readings read
// over that span, an eighth more, from its first reading, without
// walking the page again; the readings of a page past it have their
// links read after the page, with the same outputs, and the next page
// takes the new spacing.
func TestPageLinkSpanHints(t *testing.T) {
	core, db, tracer := newCountedService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	dep, key := newDependant(t, db, f)
	if _, err := core.SetLinks(ctx, key, map[string]store.InputLink{"i": {SensorID: f.key.SensorID, Key: "u", Staleness: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	// Both read every minute up to minute 6, then at 10 and 20. The
	// source's u is m+1 at minute m and the dependant's u 1, so the
	// dependant's p = u·i·2 is 2(m+1).
	var source, own []store.Reading
	for _, m := range []int{0, 1, 2, 3, 4, 5, 6, 10, 20} {
		source = append(source, store.Reading{Time: minute(m), InputIDs: []int64{f.u(), f.i()}, Values: []float64{float64(m + 1), 1}})
		own = append(own, store.Reading{Time: minute(m), InputIDs: []int64{dep.Instance.Inputs[0].ID}, Values: []float64{1}})
	}
	for k, readings := range map[store.SensorKey][]store.Reading{f.key: source, key: own} {
		if _, err := core.Ingest(ctx, k, sensing.NewBatch(readings)); err != nil {
			t.Fatal(err)
		}
	}
	page := func(t *testing.T, from int, want string, rounds int64) {
		t.Helper()
		sink := &outputSink{}
		q := store.ReadingQuery{From: minute(from), To: store.MaxTime, Limit: 3}
		n := tracer.n.Load()
		if err := core.ListReadings(ctx, key, q, sensing.ReadOptions{Outputs: true}, sink); err != nil {
			t.Fatal(err)
		}
		if got := tracer.n.Load() - n; got != rounds {
			t.Errorf("%d round trips, want %d", got, rounds)
		}
		var got []string
		for _, r := range sink.got {
			got = append(got, r[3:5]+":"+r[9:]) // the minute and p
		}
		if got := strings.Join(got, " "); got != want {
			t.Errorf("minute:p %s, want %s", got, want)
		}
	}
	// Never read: its links read over the page as walked.
	t.Run("FirstRead", func(t *testing.T) { page(t, 0, "00:2 01:4 02:6", 1) })
	// A minute apart: over 2¼ minutes from minute 3.
	t.Run("Spaced", func(t *testing.T) { page(t, 3, "03:8 04:10 05:12", 1) })
	// Over 2¼ minutes from minute 6: 10 and 20 past it, their links
	// read after the page (the source, then its readings).
	t.Run("Sparser", func(t *testing.T) { page(t, 6, "06:14 10:22 20:42", 3) })
	// 7 minutes apart: over 15¾ minutes from minute 6.
	t.Run("Respaced", func(t *testing.T) { page(t, 6, "06:14 10:22 20:42", 1) })
}

// TestPageLinks reads pages of a sensor whose input i takes a source's
// value, its output p or its input u, within a minute: in the page's one
// round trip when the source's readings over the page are few enough,
// else in two more once the page is read; as of now, in the round trips
// of the sensor, its instance then and its source's then; and the same
// values every way, the source's reading before the page included.
func TestPageLinks(t *testing.T) {
	core, db, tracer := newCountedService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	bp, err := db.GetBlueprint(ctx, f.key.OrgID, *f.sensor.BlueprintID)
	if err != nil {
		t.Fatal(err)
	}
	sensor := func(name string) store.SensorKey {
		inst, err := bp.Instantiate(nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := db.CreateSensor(ctx, f.key.OrgID, f.key.ProjectID, name, "", &store.Attachment{BlueprintID: bp.ID, Instance: inst})
		if err != nil {
			t.Fatal(err)
		}
		return store.SensorKey{OrgID: f.key.OrgID, ProjectID: f.key.ProjectID, SensorID: s.ID}
	}
	// The source, f's meter (p = u·i·2): p 2 at minute 0 and ten times
	// in the next ten seconds, 12 at minute 2; at minute 3 only i, so no
	// p (missing, not the older value) and no u; 8 at minute 5.
	source := []store.Reading{{Time: minute(0), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 1}}}
	for s := 1; s <= 10; s++ {
		source = append(source, store.Reading{Time: minute(0).Add(time.Duration(s) * time.Second), InputIDs: []int64{f.u(), f.i()}, Values: []float64{1, 1}})
	}
	source = append(source,
		store.Reading{Time: minute(2), InputIDs: []int64{f.u(), f.i()}, Values: []float64{2, 3}},
		store.Reading{Time: minute(3), InputIDs: []int64{f.i()}, Values: []float64{5}},
		store.Reading{Time: minute(5), InputIDs: []int64{f.u(), f.i()}, Values: []float64{4, 1}})
	if _, err := core.Ingest(ctx, f.key, sensing.NewBatch(source)); err != nil {
		t.Fatal(err)
	}
	// Each dependant reads u = 1 every 30 s from minute 0 to 6, so its p
	// is twice its linked i.
	at := func(n int) time.Time { return minute(0).Add(time.Duration(n) * 30 * time.Second) }
	dependants := []struct {
		key  string
		want []string // p of each reading, "-" where it has none
	}{
		{"p", []string{"4", "4", "4", "-", "24", "24", "-", "-", "-", "-", "16", "16", "16"}},
		{"u", []string{"2", "2", "2", "-", "4", "4", "4", "-", "-", "-", "8", "8", "8"}},
	}
	for _, d := range dependants {
		t.Run(d.key, func(t *testing.T) {
			key := sensor("piezometer of " + d.key)
			dep, err := core.SetLinks(ctx, key, map[string]store.InputLink{"i": {SensorID: f.key.SensorID, Key: d.key, Staleness: time.Minute}})
			if err != nil {
				t.Fatal(err)
			}
			readings := make([]store.Reading, len(d.want))
			for n := range readings {
				readings[n] = store.Reading{Time: at(n), InputIDs: []int64{dep.Instance.Inputs[0].ID}, Values: []float64{1}}
			}
			if _, err := core.Ingest(ctx, key, sensing.NewBatch(readings)); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			tests := []struct {
				name     string
				q        store.ReadingQuery
				opts     sensing.ReadOptions
				from, to int // the readings of the page, by index
				round    int64
			}{
				{"Page", store.ReadingQuery{Limit: 1000}, sensing.ReadOptions{}, 0, 12, 1},
				{"Desc", store.ReadingQuery{Limit: 1000, Desc: true}, sensing.ReadOptions{}, 12, 0, 1},
				// The source's reading at minute 2 serves the page's first.
				{"Offset", store.ReadingQuery{Limit: 3, Offset: 5}, sensing.ReadOptions{}, 5, 7, 1},
				{"Flags", store.ReadingQuery{Limit: 3, Offset: 5}, sensing.ReadOptions{Flags: true}, 5, 7, 1},
				{"AsOf", store.ReadingQuery{Limit: 1000}, sensing.ReadOptions{AsOf: &now}, 0, 12, 4},
				// The source reads 11 times from minute 0 to 0:30, more
				// than 4 a reading: the page is read first.
				{"DenseSource", store.ReadingQuery{Limit: 2}, sensing.ReadOptions{}, 0, 1, 3},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					q := tt.q
					q.From, q.To = store.MinTime, store.MaxTime
					tt.opts.Outputs = true
					sink := &outputSink{}
					before := tracer.n.Load()
					if err := core.ListReadings(ctx, key, q, tt.opts, sink); err != nil {
						t.Fatal(err)
					}
					if got := tracer.n.Load() - before; got != tt.round {
						t.Errorf("%d statements, want %d", got, tt.round)
					}
					var want []string
					for n := tt.from; ; n += cmp.Compare(tt.to, tt.from) {
						want = append(want, at(n).Format("15:04:05")+" "+d.want[n])
						if n == tt.to {
							break
						}
					}
					if got := strings.Join(sink.got, ", "); got != strings.Join(want, ", ") {
						t.Errorf("p = %s\nwant %s", got, strings.Join(want, ", "))
					}
				})
			}
		})
	}
}

// outputSink lists each reading's instant and first output ("-": none).
type outputSink struct{ got []string }

func (s *outputSink) Sensor(store.Sensor, *sensing.Outputs) error { return nil }

func (s *outputSink) Reading(r *store.Reading, o *sensing.Outputs) error {
	o.Compute(r)
	v, ok := o.Value(0)
	out := "-"
	if ok {
		out = strconv.FormatFloat(v, 'g', -1, 64)
	}
	s.got = append(s.got, r.Time.Format("15:04:05")+" "+out)
	return nil
}

// TestPageLinkSourceEdits reads pages of a sensor whose input i takes a
// source's output p, each in one round trip, after each kind of edit of
// the source: a page names the versions of the sources it holds, and the
// source's instance comes with the links only when it is at another, so
// the page after an edit is computed with the edited source. It fails
// when the instance held is taken without its version being checked.
func TestPageLinkSourceEdits(t *testing.T) {
	core, db, tracer := newCountedService(t)
	ctx := t.Context()
	f := newFixture(t, db) // p = u * i * k, k 2 by default
	dep, key := newDependant(t, db, f)
	if _, err := core.SetLinks(ctx, key, map[string]store.InputLink{"i": {SensorID: f.key.SensorID, Key: "p", Staleness: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	ingest(t, core, f.key, store.Reading{Time: minute(0), InputIDs: []int64{f.u(), f.i()}, Values: []float64{3, 5}})
	// The dependant's u is 1 and k 2: its p is twice the source's.
	ingest(t, core, key,
		store.Reading{Time: minute(0), InputIDs: []int64{dep.Instance.Inputs[0].ID}, Values: []float64{1}},
		store.Reading{Time: minute(0).Add(30 * time.Second), InputIDs: []int64{dep.Instance.Inputs[0].ID}, Values: []float64{1}})
	read := func(t *testing.T, want string) {
		t.Helper()
		sink := &outputSink{}
		q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime, Limit: 1000}
		n := tracer.n.Load()
		if err := core.ListReadings(ctx, key, q, sensing.ReadOptions{Outputs: true}, sink); err != nil {
			t.Fatal(err)
		}
		if got := tracer.n.Load() - n; got != 1 {
			t.Errorf("%d round trips, want 1", got)
		}
		if got := strings.Join(sink.got, ", "); got != want {
			t.Errorf("p = %s; want %s", got, want)
		}
	}
	// The first page reads the source's instance, the next holds it.
	read(t, "12:00:00 60, 12:00:30 60")
	read(t, "12:00:00 60, 12:00:30 60")
	for _, tt := range []struct {
		name   string
		change func(*store.Instance)
		want   string
	}{
		{"Constant", func(inst *store.Instance) { inst.Constants[0].Value = new(3.0) }, "12:00:00 90, 12:00:30 90"},
		{"Formula", func(inst *store.Instance) { inst.Outputs[0].Formula = "u + i * k" }, "12:00:00 36, 12:00:30 36"},
		{"Calibration", func(inst *store.Instance) {
			inst.Constants[0].Calibrations = []store.Calibration{{From: minute(-1), Value: 4}}
		}, "12:00:00 46, 12:00:30 46"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := core.EditInstance(ctx, f.key, func(inst *store.Instance) error { tt.change(inst); return nil }); err != nil {
				t.Fatal(err)
			}
			read(t, tt.want)
			read(t, tt.want)
		})
	}
}

// newDependant is a sensor of f's blueprint beside f's, unlinked, for the
// tests that link its input i to f's u.
func newDependant(t *testing.T, db *store.DB, f fixture) (store.Sensor, store.SensorKey) {
	t.Helper()
	ctx := t.Context()
	bp, err := db.GetBlueprint(ctx, f.key.OrgID, *f.sensor.BlueprintID)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := bp.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	dep, err := db.CreateSensor(ctx, f.key.OrgID, f.key.ProjectID, "dependant", "", &store.Attachment{BlueprintID: bp.ID, Instance: inst})
	if err != nil {
		t.Fatal(err)
	}
	return dep, store.SensorKey{OrgID: f.key.OrgID, ProjectID: f.key.ProjectID, SensorID: dep.ID}
}

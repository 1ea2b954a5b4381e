package sensing_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestKeptRateWindows: what rate rules keep of their windows between
// writes (the window a service holds under the stamp stored) is, after
// every kind of write and edit, and after a restart, exactly what reading
// the windows back from the readings gives; and the rules decide on a
// sensor that keeps them what they decide on a twin whose windows are
// forgotten before each step, so read back from its readings.
func TestKeptRateWindows(t *testing.T) {
	core, db := newService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	bp, err := db.GetBlueprint(ctx, f.key.OrgID, *f.sensor.BlueprintID)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := bp.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	project, err := db.CreateProject(ctx, f.key.OrgID, "twin", "")
	if err != nil {
		t.Fatal(err)
	}
	twin, err := db.CreateSensor(ctx, f.key.OrgID, project.ID, "twin", "", &store.Attachment{BlueprintID: bp.ID, Instance: inst})
	if err != nil {
		t.Fatal(err)
	}
	user, err := db.EnsureUser(ctx, "editor@acme.example.com", "editor")
	if err != nil {
		t.Fatal(err)
	}

	type site struct {
		key  store.SensorKey
		u, i int64
	}
	kept := site{f.key, f.u(), f.i()}
	read := site{store.SensorKey{OrgID: f.key.OrgID, ProjectID: project.ID, SensorID: twin.ID}, twin.Instance.Inputs[0].ID, twin.Instance.Inputs[1].ID}
	spike := 50.0
	for _, s := range []site{kept, read} {
		for _, spec := range []store.AlarmRuleSpec{
			{TargetKey: "p", Level: "Alert", Direction: "above", Threshold: 15, Persistence: 1, Window: 600, Per: 60},
			{TargetKey: "u", Level: "Action", Direction: "above", Threshold: 5, Deadband: 1, Persistence: 2, Window: 300, Per: 60},
			{TargetKey: "u", Level: "Alarm", Direction: "below", Threshold: -3, Persistence: 1, Window: 1200, Per: 60},
			{TargetKey: "u", Level: "Maintenance", Direction: "above", Threshold: 150, Persistence: 1},
			// An hour a second apart is more parts than a batch of the
			// dense steps starts its windows in: they read only those.
			{TargetKey: "i", Level: "Alert", Direction: "above", Threshold: 0.002, Persistence: 1, Window: 3600, Per: 60},
		} {
			if _, err := core.CreateAlarmRule(ctx, s.key, spec); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := core.SetChecks(ctx, s.key, []sensing.CheckSpec{{Target: "u", Kind: sensing.CheckSpike, Bound: &spike, Flag: store.Rejected}}); err != nil {
			t.Fatal(err)
		}
	}

	// u swings by up to 10 a minute, with noise that is never a spike.
	u := func(at time.Time) float64 {
		m := at.Sub(minute(0)).Minutes()
		return 100 + 40*math.Sin(m/4) + 5*float64(int(m*7)%5-2)
	}
	reading := func(s site, at time.Time, jump float64) store.Reading {
		return store.Reading{Time: at, InputIDs: []int64{s.u, s.i}, Values: []float64{u(at) + jump, 1 + float64(int(at.Sub(minute(0)).Minutes())%3)/10}}
	}
	span := func(s site, from, to int) []store.Reading {
		var out []store.Reading
		for m := from; m <= to; m++ {
			out = append(out, reading(s, minute(m), 0))
		}
		return out
	}
	write := func(s site, readings ...store.Reading) error {
		_, err := core.Ingest(ctx, s.key, sensing.NewBatch(readings))
		return err
	}
	stream := func(s site, readings ...store.Reading) error {
		_, err := core.Ingest(ctx, s.key, &sliceSource{readings: readings})
		return err
	}
	flag := func(s site, flag string, from, to int, input string) error {
		_, err := core.SetFlag(ctx, s.key, sensing.FlagEdit{Flag: flag, From: minute(from), To: minute(to), Input: input, Reason: "test", By: user.ID})
		return err
	}
	half := func(m int) time.Time { return minute(m).Add(30 * time.Second) }
	second := func(i int) time.Time { return minute(210).Add(time.Duration(i) * time.Second) }
	seconds := func(s site, from, to int) []store.Reading {
		var out []store.Reading
		for i := from; i <= to; i++ {
			out = append(out, reading(s, second(i), 0))
		}
		return out
	}

	other := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{MaxFuture: 24 * time.Hour})
	third := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{MaxFuture: 24 * time.Hour})
	instances := []*sensing.Service{core, other, third}
	steps := []struct {
		name  string
		do    func(s site) error
		keeps bool // every rate rule keeps its window after the step
	}{
		{"InOrder", func(s site) error { return write(s, span(s, 0, 9)...) }, true},
		{"InOrderAgain", func(s site) error { return write(s, span(s, 10, 19)...) }, true},
		{"OverwriteTheNewest", func(s site) error { return write(s, reading(s, minute(19), 5)) }, true},
		{"Late", func(s site) error { return write(s, reading(s, minute(12), -7), reading(s, half(12), 0)) }, true},
		{"LateAndNew", func(s site) error {
			return write(s, reading(s, half(17), 3), reading(s, minute(20), 0), reading(s, minute(21), 0))
		}, true},
		{"SpikeInTheBatch", func(s site) error {
			return write(s, reading(s, minute(22), 0), reading(s, minute(23), 200), reading(s, minute(24), 0))
		}, true},
		{"SpikeLast", func(s site) error { return write(s, reading(s, minute(25), 200)) }, true},
		{"SpikeRejectedAfterItsWrite", func(s site) error { return write(s, reading(s, minute(26), 0)) }, true},
		{"FlagRejected", func(s site) error { return flag(s, store.Rejected, 20, 21, "u") }, false},
		{"AfterTheFlag", func(s site) error { return write(s, span(s, 27, 29)...) }, true},
		{"FlagCleared", func(s site) error {
			_, err := core.ClearFlags(ctx, s.key, sensing.FlagEdit{From: minute(20), To: minute(21), Input: "u", Reason: "test", By: user.ID})
			return err
		}, false},
		{"AfterTheClear", func(s site) error { return write(s, span(s, 30, 31)...) }, true},
		{"SuspectAhead", func(s site) error { return flag(s, store.Suspect, 33, 34, "") }, false},
		{"IntoTheSuspectRange", func(s site) error { return write(s, span(s, 32, 35)...) }, true},
		{"FormulaEdit", func(s site) error {
			_, err := core.EditInstance(ctx, s.key, func(inst *store.Instance) error {
				k := 3.0
				inst.Constants[0].Value = &k
				return nil
			})
			return err
		}, false},
		{"AfterTheEdit", func(s site) error { return write(s, span(s, 36, 38)...) }, true},
		{"DeleteInTheWindow", func(s site) error {
			_, err := core.DeleteReadings(ctx, s.key, minute(36), minute(37))
			return err
		}, false},
		{"AfterTheDelete", func(s site) error { return write(s, span(s, 39, 40)...) }, true},
		{"Restart", func(s site) error {
			core = sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{MaxFuture: 24 * time.Hour})
			instances = append(instances, core)
			return write(s, span(s, 41, 42)...)
		}, true},
		{"Stream", func(s site) error { return stream(s, span(s, 43, 50)...) }, true},
		{"LateStream", func(s site) error { return stream(s, reading(s, minute(44), 9), reading(s, half(45), 0)) }, true},
		{"OneByOne", func(s site) error {
			for m := 51; m <= 53; m++ {
				if err := write(s, reading(s, minute(m), 0)); err != nil {
					return err
				}
			}
			return nil
		}, true},
		{"DeleteTheNewest", func(s site) error {
			_, err := core.DeleteReadings(ctx, s.key, minute(53), minute(54))
			return err
		}, false},
		{"AfterDeletingTheNewest", func(s site) error { return write(s, reading(s, minute(53), 4)) }, true},
		{"AfterAGap", func(s site) error { return write(s, reading(s, minute(200), 0), reading(s, minute(201), 0)) }, true},
		// A second apart, the windows hold thousands of values.
		{"Dense", func(s site) error { return write(s, seconds(s, 0, 999)...) }, true},
		{"DenseAgain", func(s site) error { return write(s, seconds(s, 1000, 1999)...) }, true},
		{"DenseOverwriteTheNewest", func(s site) error {
			return write(s, append([]store.Reading{reading(s, second(1999), 6)}, seconds(s, 2000, 2499)...)...)
		}, true},
		// One reading keeps no window this long (keptMax).
		{"DenseLate", func(s site) error { return write(s, reading(s, second(1500).Add(time.Millisecond), -5)) }, false},
		{"DenseAfterTheLate", func(s site) error { return write(s, seconds(s, 2500, 3299)...) }, true},
		{"DenseStream", func(s site) error { return stream(s, seconds(s, 3300, 4499)...) }, true},
		{"DenseFlag", func(s site) error { return flag(s, store.Rejected, 275, 275, "u") }, false},
		{"DenseAfterTheFlag", func(s site) error { return write(s, seconds(s, 4500, 5499)...) }, true},
		{"DenseAppendAgain", func(s site) error { return write(s, seconds(s, 5500, 6499)...) }, true},
		// Another instance writes the sensor, then this one again: what it
		// holds of the windows is no longer what is stored, and is not used;
		// each reads the windows back from the readings.
		{"DenseOtherInstance", func(s site) error {
			_, err := other.Ingest(ctx, s.key, sensing.NewBatch(seconds(s, 6500, 7499)))
			return err
		}, true},
		{"DenseBackToTheFirst", func(s site) error { return write(s, seconds(s, 7500, 8499)...) }, true},
		{"DenseAgainOnTheFirst", func(s site) error { return write(s, seconds(s, 8500, 9499)...) }, true},
		// Late readings by a third instance change what the windows hold
		// and not where they stand: only the stamp tells that what this
		// one holds is not the window any more. The third, which holds
		// nothing to patch, forgets them.
		{"DenseLateOnAThird", func(s site) error {
			var late []store.Reading
			for i := 8899; i < 9499; i++ {
				late = append(late, reading(s, second(i).Add(time.Second/2), 1))
			}
			_, err := third.Ingest(ctx, s.key, sensing.NewBatch(late))
			return err
		}, false},
		{"DenseAfterTheThirdsLate", func(s site) error { return write(s, seconds(s, 9500, 10499)...) }, true},
	}
	for _, step := range steps {
		err := db.InTx(ctx, func(tx *store.Tx) error { return tx.ForgetRateWindows(ctx, read.key.SensorID) })
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []site{kept, read} {
			if err := step.do(s); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
		}
		stamps, readWindows, err := core.RateWindows(ctx, kept.key)
		if err != nil {
			t.Fatal(err)
		}
		// What each rule keeps is the window held under its stamp, by
		// whichever instance wrote it; no other instance holds a window
		// under that stamp.
		for id, stamp := range stamps {
			var w *store.RateWindow
			for _, instance := range instances {
				held, heldStamps := instance.HeldWindows(kept.key.SensorID)
				if stamp == 0 || heldStamps[id] != stamp {
					continue
				}
				if w != nil {
					t.Errorf("after %s: rule %d's window is held by two instances", step.name, id)
				}
				w = held[id]
			}
			switch want := readWindows[id]; {
			case w == nil && step.keeps:
				t.Errorf("after %s: rule %d keeps nothing, want its window", step.name, id)
			case w != nil && !sameWindow(w, want):
				t.Errorf("after %s: rule %d keeps %s, want %s as read back", step.name, id, windowText(w), windowText(want))
			}
		}
		if got, want := decisions(t, db, kept.key), decisions(t, db, read.key); got != want {
			t.Errorf("after %s: rules keeping their windows decided\n%s\nwant, as from the readings,\n%s", step.name, got, want)
		}
	}
	if len(events(t, db, kept.key)) < 4 {
		t.Errorf("events %q: the steps should have raised and cleared alarms", events(t, db, kept.key))
	}
}

func sameWindow(a, b *store.RateWindow) bool {
	return b != nil && a.Through.Equal(b.Through) && a.Version == b.Version &&
		slices.Equal(a.Micros, b.Micros) && slices.Equal(a.Values, b.Values)
}

func windowText(w *store.RateWindow) string {
	if w == nil {
		return "nothing"
	}
	s := fmt.Sprintf("through %s v%d:", w.Through.Format("15:04:05"), w.Version)
	for i, us := range w.Micros {
		s += fmt.Sprintf(" %s=%g", time.UnixMicro(us).UTC().Format("15:04:05"), w.Values[i])
	}
	return s
}

// decisions is what the rules of the sensor decided: their states, the
// project's current alarms and its events, as text.
func decisions(t *testing.T, db *store.DB, key store.SensorKey) string {
	t.Helper()
	rules, _, _, err := db.ListAlarmRules(t.Context(), key, store.RuleKey{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, r := range rules {
		states = append(states, fmt.Sprintf("%s %s active=%v streak=%d", r.TargetKey, r.LevelName, r.Active, r.Streak))
	}
	slices.Sort(states)
	var alarms []string
	for _, a := range currentAlarms(t, db, key) {
		alarms = append(alarms, fmt.Sprintf("%s %s since %s value %g", a.TargetKey, a.LevelName, a.Since.Format("15:04:05"), a.Value))
	}
	slices.Sort(alarms)
	return fmt.Sprintf("rules %q\nalarms %q\nevents %q", states, alarms, events(t, db, key))
}

// TestKeptRateWindowWrites: with an hour's rate rule on readings a
// second apart whose level never changes, the writes of the service that
// holds the window send no statement for it: nothing of the window is
// stored, and the rule keeps its stamp, so its row is not written. A
// write through another service, which holds nothing, reads the window
// back and draws a new stamp; the first service's next write, whose hold
// is then not the stored stamp's, does too.
func TestKeptRateWindowWrites(t *testing.T) {
	tracer := &statementTracer{}
	pool, err := store.Open(t.Context(), storetest.NewDatabase(t), store.PoolConfig{Tracer: tracer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := store.New(pool)
	core := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{})
	ctx := t.Context()
	f := newFixture(t, db)
	spec := store.AlarmRuleSpec{TargetKey: "p", Level: "Alert", Direction: "above", Threshold: 1e9, Persistence: 1, Window: 3600, Per: 86400}
	if _, err := core.CreateAlarmRule(ctx, f.key, spec); err != nil {
		t.Fatal(err)
	}
	batch := func(n int) []store.Reading {
		readings := make([]store.Reading, 1000)
		for i := range readings {
			readings[i] = store.Reading{Time: minute(0).Add(time.Duration(n*1000+i) * time.Second), InputIDs: []int64{f.u(), f.i()}, Values: []float64{float64(i % 7), 1}}
		}
		return readings
	}
	const batches = 12
	for n := range batches {
		if n == 4 { // the window is full: count from here
			tracer.reset()
		}
		if _, err := core.Ingest(ctx, f.key, sensing.NewBatch(batch(n))); err != nil {
			t.Fatal(err)
		}
	}
	if got := tracer.count("rate_kept_parts") + tracer.count("UPDATE alarm_rules"); got > 0 {
		t.Errorf("%d statements wrote the rule or its window over %d batches, want none", got, batches-4)
	}

	// stampHeld is the stamp the rule stores, and whether s holds the
	// window read back under it.
	stampHeld := func(s *sensing.Service) (int64, bool) {
		stamps, read, err := core.RateWindows(ctx, f.key)
		if err != nil {
			t.Fatal(err)
		}
		held, heldStamps := s.HeldWindows(f.key.SensorID)
		for id, stamp := range stamps {
			return stamp, stamp != 0 && heldStamps[id] == stamp && sameWindow(held[id], read[id])
		}
		t.Fatal("no rate rule")
		return 0, false
	}
	first, ok := stampHeld(core)
	if !ok {
		t.Fatalf("the service does not hold the window under the stored stamp %d", first)
	}
	other := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{})
	if _, err := other.Ingest(ctx, f.key, sensing.NewBatch(batch(batches))); err != nil {
		t.Fatal(err)
	}
	second, ok := stampHeld(other)
	if second == first || !ok {
		t.Errorf("after another service's write, stamp %d (was %d), held there %v; want a new stamp, held", second, first, ok)
	}
	if _, err := core.Ingest(ctx, f.key, sensing.NewBatch(batch(batches+1))); err != nil {
		t.Fatal(err)
	}
	if third, ok := stampHeld(core); third == second || third == first || !ok {
		t.Errorf("back on the first service, stamp %d (were %d, %d), held %v; want a new stamp, held", third, first, second, ok)
	}
}

// TestHeldWindowTaken: a write that finds no window held under the
// stored stamp (another write of the sensor took it, and has yet to put
// it back) draws a new stamp, so that the window the other puts back is
// not used; a write that took the window keeps its stamp.
func TestHeldWindowTaken(t *testing.T) {
	core, db := newService(t)
	ctx := t.Context()
	f := newFixture(t, db)
	spec := store.AlarmRuleSpec{TargetKey: "p", Level: "Alert", Direction: "above", Threshold: 1e9, Persistence: 1, Window: 3600, Per: 86400}
	if _, err := core.CreateAlarmRule(ctx, f.key, spec); err != nil {
		t.Fatal(err)
	}
	at := func(i int, half bool) store.Reading {
		t := minute(0).Add(time.Duration(i) * time.Second)
		if half {
			t = t.Add(time.Second / 2)
		}
		return store.Reading{Time: t, InputIDs: []int64{f.u(), f.i()}, Values: []float64{float64(i % 7), 1}}
	}
	write := func(from, to int, half bool) {
		t.Helper()
		var batch []store.Reading
		for i := from; i < to; i++ {
			batch = append(batch, at(i, half))
		}
		if _, err := core.Ingest(ctx, f.key, sensing.NewBatch(batch)); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func() int64 {
		t.Helper()
		stamps, _, err := core.RateWindows(ctx, f.key)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range stamps {
			return s
		}
		t.Fatal("no rate rule")
		return 0
	}
	write(0, 1000, false)
	write(1000, 2000, false)
	before := stamp()
	write(2000, 3000, false)
	if got := stamp(); got != before {
		t.Errorf("a write that took the window held changed its stamp from %d to %d", before, got)
	}
	putBack := core.TakeHeld(f.key.SensorID)
	write(3000, 4000, false)
	after := stamp()
	if after == before || after == 0 {
		t.Errorf("a write that found the window taken kept stamp %d (was %d), want a new one", after, before)
	}
	putBack()
	write(3400, 3900, true) // late: a window held under the stamp would be patched
	stamps, read, err := core.RateWindows(ctx, f.key)
	if err != nil {
		t.Fatal(err)
	}
	held, heldStamps := core.HeldWindows(f.key.SensorID)
	for id, s := range stamps {
		if s != 0 && heldStamps[id] == s && !sameWindow(held[id], read[id]) {
			t.Errorf("rule %d keeps %d values through %s, want nothing or the %d read back", id, len(held[id].Micros), held[id].Through.Format("15:04:05"), len(read[id].Micros))
		}
	}
}

// statementTracer keeps the SQL of the statements sent, alone or in
// batches.
type statementTracer struct {
	mu  sync.Mutex
	sql []string
}

func (s *statementTracer) add(sql string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, sql)
}

func (s *statementTracer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = nil
}

// count is how many statements sent have each of texts in their SQL.
func (s *statementTracer) count(texts ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sql := range s.sql {
		if !slices.ContainsFunc(texts, func(text string) bool { return !strings.Contains(sql, text) }) {
			n++
		}
	}
	return n
}

func (s *statementTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.add(data.SQL)
	return ctx
}

func (s *statementTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statementTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (s *statementTracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	s.add(data.SQL)
}

func (s *statementTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

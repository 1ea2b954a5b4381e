package sensing

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sensorreadings/readings/store"
)

// A round of the rollups' maintainer is bounded: the hours it recomputes,
// each in one statement per table, and the time it takes.
const (
	rollupHours     = 168 // per sensor transaction: a week
	rollupRoundMax  = 20_000
	rollupRoundTime = 5 * time.Second
)

// MaintainRollups recomputes the queued hours of rollups every interval,
// a round at a time, until ctx ends, with workers rounds at once: each
// takes other hours (of the same sensor too), so that a year queued by an
// import or a formula edit is rebuilt on as many of PostgreSQL's cores and
// the service's. Every replica runs it; the store gives each queued hour
// to one. An edit of a sensor's formulas, which queues every hour's
// outputs at once, wakes it at once. An hour a write queued is left until
// no write has queued it for an interval (store.NextQueuedSensor): batches
// that overwrite an hour one after another have it read back once.
func (s *Service) MaintainRollups(ctx context.Context, interval time.Duration, workers int) {
	every(ctx, interval, s.rollupWake, func() {
		start := time.Now()
		var (
			wg   sync.WaitGroup
			done atomic.Int64
			more atomic.Bool
		)
		for range max(workers, 1) {
			wg.Go(func() {
				n, left, err := s.recomputeRollups(ctx, interval)
				done.Add(int64(n))
				if left {
					more.Store(true)
				}
				if err != nil && ctx.Err() == nil {
					s.log.Warn("maintain rollups", "err", err)
				}
			})
		}
		wg.Wait()
		// A rebuild longer than a round goes on at once, not a tick later.
		if more.Load() {
			s.wakeRollups()
		}
		if n := done.Load(); n > 0 {
			s.log.Debug("rollups recomputed", "hours", n, "took", time.Since(start))
		}
	})
}

// RecomputeRollups runs a round of the rollups' maintainer: it recomputes
// queued hours, a sensor at a time, until the queue is empty (for this
// replica), rollupRoundMax hours are done or rollupRoundTime has passed,
// and tells how many hours it recomputed. It takes every queued hour,
// however recently a write queued it.
func (s *Service) RecomputeRollups(ctx context.Context) (int, error) {
	n, _, err := s.recomputeRollups(ctx, 0)
	return n, err
}

// recomputeRollups is RecomputeRollups of the hours that no write has
// queued for settle; more tells that the round ended at its limits with
// hours left.
func (s *Service) recomputeRollups(ctx context.Context, settle time.Duration) (done int, more bool, err error) {
	start := time.Now()
	for done < rollupRoundMax && time.Since(start) < rollupRoundTime {
		n, err := s.recomputeHours(ctx, rollupHours, settle)
		done += n
		if err != nil || n < rollupHours {
			return done, false, err
		}
	}
	return done, true, nil
}

// recomputeHours recomputes from the readings the rollups of up to
// maxHours queued hours, of one sensor after another, round the sensors
// from where the last call left off, and tells how many it recomputed:
// fewer than maxHours when the queue is empty, or every hour queued is
// another replica's; only hours that no write has queued for settle.
func (s *Service) recomputeHours(ctx context.Context, maxHours int, settle time.Duration) (int, error) {
	done := 0
	for done < maxHours {
		after := s.rollupCursor.Load()
		sensorID, err := s.db.NextQueuedSensor(ctx, after, settle)
		if err != nil {
			return done, err
		}
		if sensorID == 0 {
			if after == 0 {
				return done, nil
			}
			s.rollupCursor.Store(0) // round again, from the first sensor
			continue
		}
		n, err := s.rollupSensor(ctx, sensorID, maxHours-done, settle)
		if err != nil {
			return done, err
		}
		s.rollupCursor.Store(sensorID)
		done += n
		if n == 0 && after == 0 {
			return done, nil // every queued hour is another replica's
		}
	}
	return done, nil
}

// rollupSensor recomputes up to limit queued hours of the sensor, in a
// transaction that holds the sensor and the hours (ClaimQueuedHours), and
// tells how many: it reads each hour's readings once, and computes the
// inputs' statistics and the outputs', as a read computes them, but for
// a sensor with linked inputs, whose outputs follow other sensors'
// readings: queries always compute those from the readings.
func (s *Service) rollupSensor(ctx context.Context, sensorID int64, limit int, settle time.Duration) (int, error) {
	var n int
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		n = 0
		q, err := tx.ClaimQueuedHours(ctx, sensorID, limit, settle)
		if err != nil || len(q.Hours) == 0 {
			return err
		}
		n = len(q.Hours)
		var outputs *Outputs
		if !q.Sensor.Instance.Linked() {
			outputs = s.outputsOf(q.Sensor, nil)
		}
		rows, err := hourRollups(ctx, tx, q, outputs)
		if err != nil {
			return err
		}
		return tx.StoreHourRollups(ctx, q, rows)
	})
	return n, err
}

// hourRollups computes the rollups of the held hours from their readings,
// as they stream in time order, with outputs' unless outputs is nil.
func hourRollups(ctx context.Context, tx *store.Tx, q store.QueuedHours, outputs *Outputs) ([]store.HourRollup, error) {
	b := newRollupBuilder(q.Sensor.FormulasVersion(), outputs)
	err := tx.HourReadings(ctx, q, func(hour time.Time, r *store.Reading) error {
		b.add(hour, r)
		return nil
	})
	return b.finish(), err
}

// rollupBuilder computes the rollups of hours from their readings, given
// in time order within each hour: their inputs' statistics, and their
// outputs' as a read computes them.
type rollupBuilder struct {
	rows    []store.HourRollup
	newest  []time.Time       // of each row, the latest time of its values
	ends    []bool            // of each row: its inputs' extremes are yet to take from its quarters (finish)
	at      map[time.Time]int // an hour's row
	last    int               // the row of the reading before; -1: none
	version int64
	outputs *Outputs // nil: the outputs are not rolled up
	ids     []int64  // of the outputs
}

func newRollupBuilder(version int64, outputs *Outputs) *rollupBuilder {
	b := &rollupBuilder{at: map[time.Time]int{}, last: -1, version: version, outputs: outputs}
	if outputs != nil {
		b.ids = outputs.IDs()
	}
	return b
}

// add adds r, of hour.
func (b *rollupBuilder) add(hour time.Time, r *store.Reading) {
	// Readings mostly come an hour at a time.
	i, ok := b.last, b.last >= 0 && b.rows[b.last].Hour.Equal(hour)
	if !ok {
		i, ok = b.at[hour]
	}
	b.last = i
	if !ok {
		i = len(b.rows)
		b.at[hour], b.last = i, i
		b.rows = append(b.rows, store.HourRollup{Hour: hour, Version: b.version, Whole: true})
		b.newest = append(b.newest, time.Time{})
		b.ends = append(b.ends, false)
		if b.outputs != nil {
			b.rows[i].Outputs = outputSeries(b.ids)
			for k := range b.rows[i].Quarters {
				b.rows[i].Quarters[k].Outputs = outputSeries(b.ids)
			}
		}
	}
	row := &b.rows[i]
	// The quarter by the seconds since the hour: Time.Sub checks for
	// overflow with a Time.Add, a tenth of add's time.
	quarter := &row.Quarters[(r.Time.Unix()-hour.Unix())/(15*60)]
	row.Count++
	quarter.Count++
	// Readings mostly come in time order, with the ids of the one before:
	// a reading no earlier than every value of the hour is later than
	// those of each series, which then take it with stats.Partial.Add,
	// without AddAny's comparison per series.
	later := !r.Time.Before(b.newest[i])
	if later {
		b.newest[i] = r.Time
	}
	// Such a value goes to the hour's sums alone: the hour's minimum,
	// maximum, first and last are its quarters', taken once at finish.
	hs, qs := row.Inputs, quarter.Inputs
	if later && inPlace(r.InputIDs, hs, qs) {
		addInPlace(hs, qs, r.Time, r.Values)
		b.ends[i] = true
	} else {
		b.addEach(i, quarter, r, later)
	}
	if b.outputs != nil {
		b.outputs.Compute(r)
		for k := range b.ids {
			if v, ok := b.outputs.Value(k); ok {
				row.Outputs[k].AddAny(r.Time, v)
				quarter.Outputs[k].AddAny(r.Time, v)
			}
		}
	}
}

// inPlace reports whether the hour's and the quarter's series hold the
// inputs ids at their positions, each with values already.
func inPlace(ids []int64, hs, qs []store.Series) bool {
	if len(hs) < len(ids) || len(qs) < len(ids) {
		return false
	}
	for j, id := range ids {
		if hs[j].ID != id || qs[j].ID != id || hs[j].Count == 0 {
			return false
		}
	}
	return true
}

// addInPlace adds values, of time t and later than each of their
// series', to the hour's sums and the quarter's series, hs and qs, which
// hold their ids at their positions (inPlace). A quarter's series that
// has values takes Partial.Add's work for them inline: the call, ten a
// reading, was a quarter of the builder's time.
func addInPlace(hs, qs []store.Series, t time.Time, values []float64) {
	hs, qs = hs[:len(values)], qs[:len(values)]
	for j, v := range values {
		h, q := &hs[j], &qs[j]
		h.Count++
		h.Sums.Add(v)
		if q.Count == 0 {
			q.Add(t, v)
			continue
		}
		q.Count++
		q.Sums.Add(v)
		q.Min, q.Max = min(q.Min, v), max(q.Max, v)
		q.Last, q.LastAt = v, t
	}
}

// addEach is add for a reading, of row i and quarter, whose ids are not
// all in place: each value goes to the hour's series as to its quarter's, by Add where it is
// in place and later, else by AddAny wherever its series is.
func (b *rollupBuilder) addEach(i int, quarter *store.Quarter, r *store.Reading, later bool) {
	row := &b.rows[i]
	hs, qs := row.Inputs, quarter.Inputs
	for j, id := range r.InputIDs {
		if later && j < len(hs) && j < len(qs) && hs[j].ID == id && qs[j].ID == id && hs[j].Count > 0 {
			hs[j].Count++
			hs[j].Sums.Add(r.Values[j])
			qs[j].Add(r.Time, r.Values[j])
			b.ends[i] = true
			continue
		}
		addSeries(&row.Inputs, j, id, r.Time, r.Values[j])
		addSeries(&quarter.Inputs, j, id, r.Time, r.Values[j])
		hs, qs = row.Inputs, quarter.Inputs
	}
}

// finish returns the rollups of the hours added, in the order their first
// readings came.
func (b *rollupBuilder) finish() []store.HourRollup {
	for i := range b.rows {
		row := &b.rows[i]
		if b.ends[i] {
			takeEnds(row)
		}
		tidySeries(&row.Inputs, &row.Outputs)
		for k := range row.Quarters {
			tidySeries(&row.Quarters[k].Inputs, &row.Quarters[k].Outputs)
		}
	}
	return b.rows
}

// rollBatch gives the store the rollups of the hours of a batch, with the
// batch's readings (ordered, one per instant) merged in, for the hours w
// says can take them: a batch of new readings, the common case, leaves
// the maintainer nothing to do, which would read each hour's readings
// back from the table as it fills. A batch that replaced, of the readings
// stored, exactly those of its hours (a logger's batch sent again, say)
// gives them rollups of its readings alone (store.BatchReplacesHours).
// The other hours (any other overwrite, an hour queued already or whose
// outputs were computed with other formulas) are queued for the
// maintainer.
//
// It returns the values, in each reading it computed the outputs of, of
// the outputs the sensor's rules watch, for their evaluation to reuse
// (nil for none).
func (s *Service) rollBatch(tx *store.Tx, w store.SensorWrite, readings []store.Reading, replaced int) *batchOutputs {
	var (
		pre     *batchOutputs
		version = w.Sensor.FormulasVersion()
		linked  = w.Sensor.Instance.Linked()
		whole   = store.BatchReplacesHours(w.Hours, replaced)
		b       *rollupBuilder
		stale   []time.Time
		i       int
	)
	for _, h := range w.Hours {
		for i < len(readings) && readings[i].Time.Before(h.Hour) {
			i++ // of an hour the lock did not find: none, once it found the sensor
		}
		end := h.Hour.Add(time.Hour)
		j := i
		for j < len(readings) && readings[j].Time.Before(end) {
			j++
		}
		hour := readings[i:j]
		i = j
		if whole {
			h.Mergeable, h.Rollup = true, nil
		}
		if r := h.Rollup; !h.Mergeable || (r != nil && (r.Version != version || (r.Outputs == nil) != linked)) {
			stale = append(stale, h.Hour)
			continue
		}
		if b == nil {
			var outputs *Outputs
			if !linked {
				outputs = s.outputsOf(w.Sensor, nil)
			}
			b = newRollupBuilder(version, outputs)
			pre = newBatchOutputs(readings, outputs, w.Rules, s.outputMemory)
		}
		if h.Rollup != nil {
			b.seed(h.Rollup)
		}
		start := j - len(hour) // hour's first, in readings
		for k := range hour {
			b.add(h.Hour, &hour[k])
			pre.record(start+k, b.outputs)
		}
	}
	var rows []store.HourRollup
	if b != nil {
		rows = b.finish()
	}
	tx.StoreBatchRollups(w, rows, stale)
	return pre
}

// seed starts the row of r's hour from r, the rollup of the readings of
// the hour before those to add. Adding each later value to its sums, in
// time order, gives the very sums the maintainer's recomputation from the
// readings does; adding a sum of the new values to them would round
// differently, and an answer from the rollups would differ in its last
// bits from the same answer from the readings.
func (b *rollupBuilder) seed(r *store.HourRollup) {
	row := store.HourRollup{Hour: r.Hour, Count: r.Count, Version: b.version, Whole: true, Inputs: slices.Clone(r.Inputs)}
	row.Outputs = b.seedOutputs(r.Outputs)
	for k := range row.Quarters {
		q := &r.Quarters[k]
		row.Quarters[k] = store.Quarter{Count: q.Count, Inputs: slices.Clone(q.Inputs), Outputs: b.seedOutputs(q.Outputs)}
	}
	b.at[r.Hour], b.last = len(b.rows), -1
	b.rows = append(b.rows, row)
	b.newest = append(b.newest, latest(row.Inputs, row.Outputs))
	b.ends = append(b.ends, false)
}

// takeEnds gives each input series of the hour row the minimum, maximum,
// first and last of its quarters' series of the same input, which hold
// every value of the hour: add counts and sums a later value in the
// hour's series, and leaves the rest to its quarter's.
func takeEnds(row *store.HourRollup) {
	for j := range row.Inputs {
		h := &row.Inputs[j]
		for k := range row.Quarters {
			qs := row.Quarters[k].Inputs
			q := j
			if q >= len(qs) || qs[q].ID != h.ID {
				if q = slices.IndexFunc(qs, func(s store.Series) bool { return s.ID == h.ID }); q < 0 {
					continue
				}
			}
			h.MergeEnds(&qs[q].Partial)
		}
	}
}

// seedOutputs are the outputs' series as add keeps them, one for each of
// the outputs' ids in order, from have, ordered by id without those that
// have no value; nil where the outputs are not rolled up.
func (b *rollupBuilder) seedOutputs(have []store.Series) []store.Series {
	if b.outputs == nil {
		return nil
	}
	s := outputSeries(b.ids)
	for _, h := range have {
		if k := slices.Index(b.ids, h.ID); k >= 0 {
			s[k] = h
		}
	}
	return s
}

// outputSeries are empty series of the outputs ids.
func outputSeries(ids []int64) []store.Series {
	s := make([]store.Series, len(ids))
	for k, id := range ids {
		s[k].ID = id
	}
	return s
}

// latest is the latest time of the values of the series: of an hour's,
// those of its quarters too.
func latest(series ...[]store.Series) time.Time {
	var t time.Time
	for _, s := range series {
		for _, p := range s {
			if p.Count > 0 && p.LastAt.After(t) {
				t = p.LastAt
			}
		}
	}
	return t
}

// addSeries adds value v of time t to input id's series in s, where it
// mostly is at position j, as in the readings before.
func addSeries(s *[]store.Series, j int, id int64, t time.Time, v float64) {
	k := j
	if k >= len(*s) || (*s)[k].ID != id {
		if k = slices.IndexFunc(*s, func(s store.Series) bool { return s.ID == id }); k < 0 {
			k = len(*s)
			*s = append(*s, store.Series{ID: id})
		}
	}
	(*s)[k].AddAny(t, v)
}

// tidySeries orders inputs by id and leaves out the outputs without
// values.
func tidySeries(inputs, outputs *[]store.Series) {
	slices.SortFunc(*inputs, func(a, b store.Series) int { return cmp.Compare(a.ID, b.ID) })
	if *outputs != nil {
		*outputs = slices.DeleteFunc(*outputs, func(s store.Series) bool { return s.Count == 0 })
	}
}

// every calls fn every interval, and when woken, until ctx ends.
func every(ctx context.Context, interval time.Duration, wake <-chan struct{}, fn func()) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-wake:
		case <-ctx.Done():
			return
		}
		fn()
	}
}

// wakeRollups wakes this replica's maintainer, unless it is awake.
func (s *Service) wakeRollups() {
	select {
	case s.rollupWake <- struct{}{}:
	default:
	}
}

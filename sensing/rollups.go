package sensing

import (
	"context"
	"time"

	"github.com/sensorreadings/readings/stats"
	"github.com/sensorreadings/readings/store"
)

// A round of the rollups' maintainer is bounded: the hours it recomputes,
// each in one statement per table, and the time it takes.
const (
	rollupHours     = 24 // per sensor transaction
	rollupRoundMax  = 2_000
	rollupRoundTime = 5 * time.Second
)

// MaintainRollups recomputes the queued hours of rollups every interval,
// a round at a time, until ctx ends. Every replica runs it; the store
// gives each queued hour to one.
func (s *Service) MaintainRollups(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		start := time.Now()
		done, err := s.RecomputeRollups(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("maintain rollups", "err", err)
		}
		if done > 0 {
			s.log.Debug("rollups recomputed", "hours", done, "took", time.Since(start))
		}
	})
}

// RecomputeRollups runs a round of the rollups' maintainer: it recomputes
// queued hours, a sensor at a time, until the queue is empty (for this
// replica), rollupRoundMax hours are done or rollupRoundTime has passed,
// and tells how many hours it recomputed.
func (s *Service) RecomputeRollups(ctx context.Context) (int, error) {
	start, done := time.Now(), 0
	for done < rollupRoundMax && time.Since(start) < rollupRoundTime {
		n, err := s.recomputeHours(ctx, rollupHours)
		done += n
		if err != nil || n < rollupHours {
			return done, err
		}
	}
	return done, nil
}

// recomputeHours recomputes from the readings the rollups of up to
// maxHours queued hours, of one sensor after another, round the sensors
// from where the last call left off, and tells how many it recomputed:
// fewer than maxHours when the queue is empty, or every hour queued is
// another replica's.
func (s *Service) recomputeHours(ctx context.Context, maxHours int) (int, error) {
	done := 0
	for done < maxHours {
		after := s.rollupCursor.Load()
		sensorID, err := s.db.NextQueuedSensor(ctx, after)
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
		n, err := s.rollupSensor(ctx, sensorID, maxHours-done)
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
// tells how many. The outputs are computed as a read computes them, but
// for a sensor with linked inputs, whose outputs follow other sensors'
// readings: queries always compute those from the readings.
func (s *Service) rollupSensor(ctx context.Context, sensorID int64, limit int) (int, error) {
	var n int
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		n = 0
		q, err := tx.ClaimQueuedHours(ctx, sensorID, limit)
		if err != nil || len(q.Hours) == 0 {
			return err
		}
		n = len(q.Hours)
		if err := tx.RecomputeHours(ctx, q); err != nil {
			return err
		}
		if !q.Sensor.Instance.Linked() {
			if outputs := s.outputsOf(q.Sensor, nil); outputs.computes() {
				rows, err := outputRollups(ctx, tx, q, outputs)
				if err != nil {
					return err
				}
				if err := tx.StoreOutputRollups(ctx, q, rows); err != nil {
					return err
				}
			}
		}
		return tx.FinishQueuedHours(ctx, q)
	})
	return n, err
}

// outputRollups computes the outputs of the readings of the held hours,
// as they stream in time order, and returns their statistics per hour.
func outputRollups(ctx context.Context, tx *store.Tx, q store.QueuedHours, outputs *Outputs) ([]store.OutputRollup, error) {
	ids := outputs.IDs()
	parts := make([]stats.Partial, len(ids))
	var rows []store.OutputRollup
	flush := func(hour time.Time) {
		for k := range parts {
			if parts[k].Count > 0 {
				rows = append(rows, store.OutputRollup{Hour: hour, OutputID: ids[k], Partial: parts[k]})
			}
			parts[k] = stats.Partial{}
		}
	}
	add := func(k int, t time.Time, v float64) { parts[k].Add(t, v) }
	var (
		current time.Time
		started bool
	)
	err := tx.HourReadings(ctx, q, func(hour time.Time, r *store.Reading) error {
		if started && !hour.Equal(current) {
			flush(current)
		}
		current, started = hour, true
		addOutputs(outputs, r, add)
		return nil
	})
	if started {
		flush(current)
	}
	return rows, err
}

// every calls fn every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-ctx.Done():
			return
		}
		fn()
	}
}

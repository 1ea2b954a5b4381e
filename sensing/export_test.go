package sensing

import (
	"context"
	"time"

	"github.com/sensorreadings/readings/store"
)

// RateWindows returns, by rule id, what each rate rule of the sensor keeps
// (nil when nothing) and its window read back from the readings, to the
// sensor's newest, as a write that keeps nothing reads it (nil when the
// sensor has no reading).
func (s *Service) RateWindows(ctx context.Context, key store.SensorKey) (kept, read map[int64]*store.RateWindow, err error) {
	kept, read = map[int64]*store.RateWindow{}, map[int64]*store.RateWindow{}
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		sensor, err := tx.LockSensor(ctx, key)
		if err != nil {
			return err
		}
		rules, err := tx.SensorRules(ctx, sensor.ID)
		if err != nil {
			return err
		}
		newest, err := tx.LatestReading(ctx, sensor.ID)
		if err != nil {
			return err
		}
		for _, r := range rules {
			if r.Window == 0 {
				continue
			}
			kept[r.ID], read[r.ID] = nil, nil
			if r.RateKept != nil {
				w, err := keptWindow(r, 0, nil)
				if err != nil {
					return err
				}
				kept[r.ID] = &w
			}
			if newest == nil {
				continue
			}
			rs := newRates(rules)
			from := newest.Time.Add(-window(r))
			if err := s.readRates(ctx, tx, sensor, rs, true, from, newest.Time, store.ReadingQuery{From: from, To: newest.Time}); err != nil {
				return err
			}
			series := rs[r.TargetID]
			read[r.ID] = &store.RateWindow{Through: newest.Time, Version: instanceVersion(sensor), Micros: series.t, Values: series.v}
		}
		return nil
	})
	return kept, read, err
}

// RecomputeSettledRollups is a round of MaintainRollups of interval
// settle: the hours no write has queued for settle; more tells that the
// round ended at its limits, with hours left.
func (s *Service) RecomputeSettledRollups(ctx context.Context, settle time.Duration) (n int, more bool, err error) {
	return s.recomputeRollups(ctx, settle)
}

// HeldWindows returns, by rule id, the windows the service holds of the
// sensor's rate rules and their stamps.
func (s *Service) HeldWindows(sensorID int64) (map[int64]*store.RateWindow, map[int64]int64) {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	windows, stamps := map[int64]*store.RateWindow{}, map[int64]int64{}
	for id, w := range s.held.sensors[sensorID] {
		windows[id], stamps[id] = w.window, w.stamp
	}
	return windows, stamps
}

// IngestNaming is Ingest of a batch whose write names stamps to the
// rules' read as held, whatever this service holds: as when another write
// of the sensor took the windows held between the two.
func (s *Service) IngestNaming(ctx context.Context, key store.SensorKey, readings []store.Reading, stamps []int64) error {
	in, err := newBatchIntake(NewBatch(readings), s.checks())
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		_, _, err := s.write(ctx, tx, key, in, stamps)
		return err
	})
}

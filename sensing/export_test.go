package sensing

import (
	"context"
	"time"

	"github.com/sensorreadings/readings/store"
)

// RateWindows returns, by rule id, the stamp of what each rate rule of
// the sensor keeps, as stored (0: nothing), and its window read back from
// the readings, to the sensor's newest, as a write that holds nothing
// reads it (nil when the sensor has no reading).
func (s *Service) RateWindows(ctx context.Context, key store.SensorKey) (stamps map[int64]int64, read map[int64]*store.RateWindow, err error) {
	stamps, read = map[int64]int64{}, map[int64]*store.RateWindow{}
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
			stamps[r.ID], read[r.ID] = r.RateStamp, nil
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
	return stamps, read, err
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

// TakeHeld takes the windows the service holds of the sensor's rules out
// of its holds, as a write of the sensor does, and returns what puts them
// back, as that write does once it commits.
func (s *Service) TakeHeld(sensorID int64) (putBack func()) {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	held := s.held.sensors[sensorID]
	delete(s.held.sensors, sensorID)
	return func() {
		s.held.mu.Lock()
		defer s.held.mu.Unlock()
		s.held.sensors[sensorID] = held
	}
}

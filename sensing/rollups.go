package sensing

import (
	"context"
	"time"

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
		n, err := s.db.MaintainRollups(ctx, s.rollupOutputs, rollupHours)
		done += n
		if err != nil || n < rollupHours {
			return done, err
		}
	}
	return done, nil
}

// rollupOutputs computes a sensor's outputs for its rollups, as a read
// does. A sensor with linked inputs has none: its outputs follow other
// sensors' readings, so queries always compute them from the readings.
func (s *Service) rollupOutputs(sensor store.Sensor) store.Outputs {
	if sensor.Instance.Linked() {
		return nil
	}
	if o := s.outputsOf(sensor, nil); o.computes() {
		return o
	}
	return nil
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

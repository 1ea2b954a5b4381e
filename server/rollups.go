package server

import (
	"context"
	"time"

	"github.com/sensorreadings/readings/store"
)

// rollupRound bounds a round of the rollups' maintainer: the hours it
// recomputes, each in one statement per table, and the time it takes.
const (
	rollupHours     = 24 // per sensor transaction
	rollupRoundMax  = 2_000
	rollupRoundTime = 5 * time.Second
)

// MaintainRollups recomputes the queued hours of rollups every interval,
// a round at a time, until ctx ends.
func (s *Server) MaintainRollups(ctx context.Context, interval time.Duration) {
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
func (s *Server) RecomputeRollups(ctx context.Context) (int, error) {
	start, done := time.Now(), 0
	for done < rollupRoundMax && time.Since(start) < rollupRoundTime {
		n, err := s.store.MaintainRollups(ctx, s.rollupOutputs, rollupHours)
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
func (s *Server) rollupOutputs(sensor store.Sensor) store.Outputs {
	if sensor.Instance.Linked() {
		return nil
	}
	if w := s.newOutputsWriter(sensor, nil); w.outputs != nil {
		return w
	}
	return nil
}

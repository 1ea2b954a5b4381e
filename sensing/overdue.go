package sensing

import (
	"context"
	"time"

	"github.com/sensorreadings/readings/alarms"
	"github.com/sensorreadings/readings/store"
)

// CheckOverdue checks overdue sensors every interval until ctx ends
// (CheckOverdueOnce). Every replica runs it; a lock lets one at a time
// make the changes.
func (s *Service) CheckOverdue(ctx context.Context, interval time.Duration) {
	every(ctx, interval, nil, func() {
		raised, cleared, err := s.CheckOverdueOnce(ctx, time.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("check overdue sensors", "err", err)
		case raised+cleared > 0:
			s.log.Info("overdue sensors", "raised", raised, "cleared", cleared)
		}
	})
}

// CheckOverdueOnce raises, at now, the overdue alarms of the sensors of
// active projects silent longer than their rule allows, and clears those
// of the sensors that have reported since (alarms.CheckOverdue), in one
// transaction, and tells how many it raised and cleared. A replica that
// finds another checking returns at once, having changed nothing.
func (s *Service) CheckOverdueOnce(ctx context.Context, now time.Time) (raised, cleared int64, err error) {
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		raised, cleared = 0, 0
		ours, err := tx.LockOverdueCheck(ctx)
		if err != nil || !ours {
			return err
		}
		states, err := tx.OverdueStates(ctx)
		if err != nil {
			return err
		}
		var raise, clear []store.OverdueState
		for _, st := range states {
			switch alarms.CheckOverdue(st.Raised, st.Reported, st.Last, st.After, now) {
			case alarms.OverdueRaise:
				raise = append(raise, st)
			case alarms.OverdueClear:
				clear = append(clear, st)
			}
		}
		if raised, err = tx.RaiseOverdue(ctx, raise, now); err != nil {
			return err
		}
		cleared, err = tx.ClearOverdue(ctx, clear)
		return err
	})
	return raised, cleared, err
}

package sensing

import (
	"context"
	"time"
)

// CheckOverdue checks overdue sensors every interval until ctx ends. Each
// replica runs it; the store lets one of them at a time make the changes.
func (s *Service) CheckOverdue(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		raised, cleared, err := s.db.CheckOverdue(ctx, time.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("check overdue sensors", "err", err)
		case raised+cleared > 0:
			s.log.Info("overdue sensors", "raised", raised, "cleared", cleared)
		}
	})
}

package server

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/gen"
)

// Standby is a hot standby of the primary, which Deps.StandbyReads read
// the readings of standbyOperations from.
type Standby interface {
	// CaughtUp tells whether the standby has replayed the primary's log up
	// to lsn ("" for any position), and fails when it does not answer.
	CaughtUp(ctx context.Context, lsn string) (bool, error)
}

// standbyOperations may read from the standby: pages, export, aggregates
// and latest values. Everything else, the sensor each of them looks up
// included, uses the primary.
var standbyOperations = map[string]bool{
	"listReadings": true, "exportReadings": true, "aggregateReadings": true, "latestReadings": true, "listProjectReadings": true,
}

// standbyPoll is how often a read that must see a write asks the standby
// how far it has replayed.
const standbyPoll = 5 * time.Millisecond

type standbyKey struct{}

// routeReads chooses, for a read operation, the standby when it answers and
// has replayed the log up to the client's X-Readings-Min-LSN within
// cfg.StandbyWait, and the primary otherwise: a standby that is down or
// behind costs a read that wait at most, never an error.
func (s *Server) routeReads(next echo.HandlerFunc) echo.HandlerFunc {
	if s.cfg.Standby == nil {
		return next
	}
	return func(c echo.Context) error {
		op := s.ops.lookup(c)
		if op == nil || !standbyOperations[op.id] {
			return next(c)
		}
		req := c.Request()
		if s.standbyReady(req.Context(), req.Header.Get("X-Readings-Min-LSN")) {
			c.SetRequest(req.WithContext(context.WithValue(req.Context(), standbyKey{}, true)))
			s.metrics.standbyReads.Inc()
		}
		return next(c)
	}
}

func (s *Server) standbyReady(ctx context.Context, lsn string) bool {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StandbyWait)
	defer cancel()
	for {
		ok, err := s.cfg.Standby.CaughtUp(ctx, lsn)
		if err != nil || ok {
			return ok
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(standbyPoll):
		}
	}
}

// reads is where the request's reads of readings go: to the standby when
// routeReads chose it, else to the primary.
func (s *Server) reads(ctx context.Context) Reads {
	if ctx.Value(standbyKey{}) != nil {
		return s.StandbyReads
	}
	return s.Reads
}

// writeOperations answer X-Readings-LSN, the primary's log position after
// the write, for a read that must see it (X-Readings-Min-LSN).
var writeOperations = map[string]bool{"PostReadings": true, "DeleteReadings": true}

// writePosition sets, when there is a standby to read from, the
// X-Readings-LSN header of a write of writeOperations that succeeded: the
// handlers make their one call, and this asks where the write ended. The
// write is done: failing to tell costs the header, not the answer.
func (s *Server) writePosition(next gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	if s.cfg.Standby == nil || !writeOperations[operationID] {
		return next
	}
	return func(c echo.Context, request any) (any, error) {
		response, err := next(c, request)
		if err != nil {
			return response, err
		}
		ctx := c.Request().Context()
		if lsn, err := s.Health.WALPosition(ctx); err != nil {
			s.log.WarnContext(ctx, "wal position", "err", err)
		} else {
			c.Response().Header().Set("X-Readings-LSN", lsn)
		}
		return response, nil
	}
}

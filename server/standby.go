package server

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/store"
)

// Reader is the part of the store that the read operations of
// standbyOperations may take from a hot standby.
type Reader interface {
	LinkSource(ctx context.Context, of store.Sensor, id int64) (store.Sensor, error)
	ListLinkReadings(ctx context.Context, sensor store.Sensor, q store.LinkQuery, fn func(*store.Reading) error) error
	ListReadings(ctx context.Context, sensor store.Sensor, q store.ReadingQuery, fn func(*store.Reading) error) error
	InputIDs(ctx context.Context, sensor store.Sensor) ([]int64, error)
	LatestReadings(ctx context.Context, orgID, projectID, after int64, limit int) ([]store.Latest, bool, error)
	AggregateBuckets(ctx context.Context, sensor store.Sensor, q store.BucketQuery, outputs store.Outputs, sink store.BucketSink) (store.RollupUse, error)
	Buckets(ctx context.Context, q store.BucketQuery) ([]time.Time, error)
}

// Standby is a hot standby of the primary, for reads.
type Standby interface {
	Reader
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

type readerKey struct{}

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
			c.SetRequest(req.WithContext(context.WithValue(req.Context(), readerKey{}, Reader(s.cfg.Standby))))
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

// reader is where the request's reads go: the standby routeReads chose, or
// the primary.
func (s *Server) reader(ctx context.Context) Reader {
	if r, ok := ctx.Value(readerKey{}).(Reader); ok {
		return r
	}
	return s.store
}

// writePosition is the primary's log position after a write, for the
// X-Readings-LSN header, when there is a standby to read from. The write is
// done: failing to tell where it ended costs the header, not the answer.
func (s *Server) writePosition(ctx context.Context) *string {
	if s.cfg.Standby == nil {
		return nil
	}
	lsn, err := s.store.WALPosition(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "wal position", "err", err)
		return nil
	}
	return &lsn
}

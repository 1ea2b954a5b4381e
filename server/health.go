package server

import (
	"context"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// Health is what the probes and the metrics read of the database.
type Health interface {
	Readiness(ctx context.Context) (store.Readiness, error)
	PoolStats() store.PoolStats
	// OpsStats reads what an operator watches of the database and the
	// background work, for the metrics.
	OpsStats(ctx context.Context) (store.OpsStats, error)
	// WALPosition is the primary's log position, for the X-Readings-LSN
	// of a write when there is a standby.
	WALPosition(ctx context.Context) (string, error)
}

// GetHealth answers while the process runs.
func (s *Server) GetHealth(ctx context.Context, _ gen.GetHealthRequestObject) (gen.GetHealthResponseObject, error) {
	return gen.GetHealth200JSONResponse{Status: gen.HealthStatusOk}, nil
}

// GetReady answers 200 when the database answers and is fully migrated.
func (s *Server) GetReady(ctx context.Context, _ gen.GetReadyRequestObject) (gen.GetReadyResponseObject, error) {
	r, err := s.Health.Readiness(ctx)
	if err != nil {
		return nil, err
	}
	if r.Pending {
		return nil, apperr.Errorf(apperr.Unavailable, "the database lacks migrations past version %d; run readings migrate", r.Version)
	}
	return gen.GetReady200JSONResponse{
		Status:           gen.ReadinessStatusOk,
		Storage:          gen.ReadinessStorage(r.Storage),
		MigrationVersion: r.Version,
	}, nil
}

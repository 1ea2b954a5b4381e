package server

import (
	"context"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
)

// GetHealth answers while the process runs.
func (s *Server) GetHealth(ctx context.Context, _ gen.GetHealthRequestObject) (gen.GetHealthResponseObject, error) {
	return gen.GetHealth200JSONResponse{Status: gen.HealthStatusOk}, nil
}

// GetReady answers 200 when the database answers and is fully migrated.
func (s *Server) GetReady(ctx context.Context, _ gen.GetReadyRequestObject) (gen.GetReadyResponseObject, error) {
	r, err := s.store.Readiness(ctx)
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

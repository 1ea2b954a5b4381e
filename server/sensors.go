package server

import (
	"context"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

func sensorKey(orgID, projectID, sensorID int64) store.SensorKey {
	return store.SensorKey{OrgID: orgID, ProjectID: projectID, SensorID: sensorID}
}

// ListSensors returns a page of the project's sensors.
func (s *Server) ListSensors(ctx context.Context, req gen.ListSensorsRequestObject) (gen.ListSensorsResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	sensors, more, err := s.store.ListSensors(ctx, req.OrgId, req.ProjId, after, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListSensors200JSONResponse{Items: mapSlice(sensors, toSensor)}
	if len(sensors) > 0 {
		out.NextCursor = nextCursor(more, sensors[len(sensors)-1].ID)
	}
	return out, nil
}

// CreateSensor creates a sensor in the project.
func (s *Server) CreateSensor(ctx context.Context, req gen.CreateSensorRequestObject) (gen.CreateSensorResponseObject, error) {
	sensor, err := s.store.CreateSensor(ctx, req.OrgId, req.ProjId, req.Body.Name, deref(req.Body.Description))
	if err != nil {
		return nil, err
	}
	return gen.CreateSensor201JSONResponse(toSensor(sensor)), nil
}

// GetSensor returns a sensor.
func (s *Server) GetSensor(ctx context.Context, req gen.GetSensorRequestObject) (gen.GetSensorResponseObject, error) {
	sensor, err := s.store.GetSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	return gen.GetSensor200JSONResponse(toSensor(sensor)), nil
}

// UpdateSensor changes the fields the body names.
func (s *Server) UpdateSensor(ctx context.Context, req gen.UpdateSensorRequestObject) (gen.UpdateSensorResponseObject, error) {
	patch := store.SensorPatch{Name: req.Body.Name, Description: req.Body.Description}
	sensor, err := s.store.UpdateSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), patch)
	if err != nil {
		return nil, err
	}
	return gen.UpdateSensor200JSONResponse(toSensor(sensor)), nil
}

// DeleteSensor deletes a sensor and its readings.
func (s *Server) DeleteSensor(ctx context.Context, req gen.DeleteSensorRequestObject) (gen.DeleteSensorResponseObject, error) {
	if err := s.store.DeleteSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId)); err != nil {
		return nil, err
	}
	return gen.DeleteSensor204Response{}, nil
}

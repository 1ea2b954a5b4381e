package server

import (
	"context"
	"fmt"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// Sensors are a project's sensors as stored.
type Sensors interface {
	ListSensors(ctx context.Context, orgID, projectID, after int64, limit int) ([]store.Sensor, bool, error)
	GetSensor(ctx context.Context, key store.SensorKey) (store.Sensor, error)
	DeleteSensor(ctx context.Context, key store.SensorKey) error
}

// SensorEdits create sensors and change what their readings mean, each
// edit rechecking the sensor's alarms.
type SensorEdits interface {
	CreateSensor(ctx context.Context, orgID, projectID int64, name, description string, blueprintID *int64, constants map[string]float64) (store.Sensor, error)
	UpdateSensor(ctx context.Context, key store.SensorKey, edit sensing.SensorEdit) (store.Sensor, error)
	EditInstance(ctx context.Context, key store.SensorKey, edit func(*store.Instance) error) (store.Sensor, error)
	SetBaselines(ctx context.Context, key store.SensorKey, edits []sensing.BaselineEdit) (store.Sensor, error)
	SetLinks(ctx context.Context, key store.SensorKey, links map[string]store.InputLink) (store.Sensor, error)
}

func sensorKey(orgID, projectID, sensorID int64) store.SensorKey {
	return store.SensorKey{OrgID: orgID, ProjectID: projectID, SensorID: sensorID}
}

// ListSensors returns a page of the project's sensors.
func (s *Server) ListSensors(ctx context.Context, req gen.ListSensorsRequestObject) (gen.ListSensorsResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	sensors, more, err := s.Sensors.ListSensors(ctx, req.OrgId, req.ProjId, after, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListSensors200JSONResponse{Items: mapSlice(sensors, toSensor)}
	if len(sensors) > 0 {
		out.NextCursor = nextCursor(more, sensors[len(sensors)-1].ID)
	}
	return out, nil
}

// CreateSensor creates a sensor in the project, with an instance of a
// blueprint when the body names one.
func (s *Server) CreateSensor(ctx context.Context, req gen.CreateSensorRequestObject) (gen.CreateSensorResponseObject, error) {
	sensor, err := s.SensorEdits.CreateSensor(ctx, req.OrgId, req.ProjId, req.Body.Name, deref(req.Body.Description), req.Body.BlueprintId, deref(req.Body.Constants))
	if err != nil {
		return nil, err
	}
	return gen.CreateSensor201JSONResponse(toSensor(sensor)), nil
}

// GetSensor returns a sensor: its formulas setup, with every id.
func (s *Server) GetSensor(ctx context.Context, req gen.GetSensorRequestObject) (gen.GetSensorResponseObject, error) {
	sensor, err := s.Sensors.GetSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	return gen.GetSensor200JSONResponse(toSensor(sensor)), nil
}

// UpdateSensor changes the fields the body names. A blueprint other than
// the sensor's makes a new instance; the sensor's own keeps its instance and
// applies the constants.
func (s *Server) UpdateSensor(ctx context.Context, req gen.UpdateSensorRequestObject) (gen.UpdateSensorResponseObject, error) {
	sensor, err := s.SensorEdits.UpdateSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), sensing.SensorEdit{
		Name: req.Body.Name, Description: req.Body.Description, BlueprintID: req.Body.BlueprintId, Constants: deref(req.Body.Constants),
	})
	if err != nil {
		return nil, err
	}
	return gen.UpdateSensor200JSONResponse(toSensor(sensor)), nil
}

// UpdateFormulas edits the formulas and constants of the sensor's instance,
// in place, after checking every formula of the result.
func (s *Server) UpdateFormulas(ctx context.Context, req gen.UpdateFormulasRequestObject) (gen.UpdateFormulasResponseObject, error) {
	sensor, err := s.SensorEdits.EditInstance(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), func(inst *store.Instance) error {
		if err := inst.SetFormulas(deref(req.Body.Outputs)); err != nil {
			return err
		}
		return inst.SetConstants(deref(req.Body.Constants))
	})
	if err != nil {
		return nil, err
	}
	return gen.UpdateFormulas200JSONResponse(toSensor(sensor)), nil
}

// UpdateCalibrations sets the dated values of the named constants.
func (s *Server) UpdateCalibrations(ctx context.Context, req gen.UpdateCalibrationsRequestObject) (gen.UpdateCalibrationsResponseObject, error) {
	calibrations := make(map[string][]store.Calibration, len(*req.Body))
	for key, dated := range *req.Body {
		for _, c := range dated {
			from, err := datetime.Parse(c.From)
			if err != nil {
				return nil, apperr.Errorf(apperr.Invalid, "constant %q: from: %v", key, err)
			}
			calibrations[key] = append(calibrations[key], store.Calibration{From: from, Value: c.Value})
		}
		if calibrations[key] == nil {
			calibrations[key] = []store.Calibration{}
		}
	}
	sensor, err := s.SensorEdits.EditInstance(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), func(inst *store.Instance) error {
		return inst.SetCalibrations(calibrations)
	})
	if err != nil {
		return nil, err
	}
	return gen.UpdateCalibrations200JSONResponse(toSensor(sensor)), nil
}

// UpdateBaselines replaces the sensor's baselines, taking those chosen by
// reading from the sensor's stored readings.
func (s *Server) UpdateBaselines(ctx context.Context, req gen.UpdateBaselinesRequestObject) (gen.UpdateBaselinesResponseObject, error) {
	edits := make([]sensing.BaselineEdit, len(*req.Body))
	for i, b := range *req.Body {
		edits[i] = sensing.BaselineEdit{Index: i}
		if b.Values != nil {
			edits[i].Values = *b.Values
		}
		var err error
		if edits[i].From, err = baselineDatetime(i, "from", b.From); err != nil {
			return nil, err
		}
		if edits[i].Reading, err = baselineDatetime(i, "reading", b.Reading); err != nil {
			return nil, err
		}
	}
	sensor, err := s.SensorEdits.SetBaselines(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), edits)
	if err != nil {
		return nil, err
	}
	return gen.UpdateBaselines200JSONResponse(toSensor(sensor)), nil
}

// baselineDatetime parses field of baseline index, if given.
func baselineDatetime[T ~string](index int, field string, value *T) (*time.Time, error) {
	if value == nil {
		return nil, nil
	}
	t, err := datetime.Parse(string(*value))
	if err != nil {
		return nil, &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("baseline %d: %s: %v", index, field, err), Details: map[string]any{"index": index}}
	}
	return &t, nil
}

// defaultStaleness is a link's staleness when the request gives none, as
// the spec states it.
const defaultStaleness = time.Hour

// UpdateLinks replaces the links of the sensor's inputs.
func (s *Server) UpdateLinks(ctx context.Context, req gen.UpdateLinksRequestObject) (gen.UpdateLinksResponseObject, error) {
	links := make(map[string]store.InputLink, len(*req.Body))
	for key, l := range *req.Body {
		staleness := defaultStaleness
		if l.Staleness != nil {
			staleness = time.Duration(*l.Staleness) * time.Second
		}
		links[key] = store.InputLink{SensorID: l.SensorId, Key: l.Key, Staleness: staleness}
	}
	sensor, err := s.SensorEdits.SetLinks(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), links)
	if err != nil {
		return nil, err
	}
	return gen.UpdateLinks200JSONResponse(toSensor(sensor)), nil
}

// DeleteSensor deletes a sensor and its readings.
func (s *Server) DeleteSensor(ctx context.Context, req gen.DeleteSensorRequestObject) (gen.DeleteSensorResponseObject, error) {
	if err := s.Sensors.DeleteSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId)); err != nil {
		return nil, err
	}
	return gen.DeleteSensor204Response{}, nil
}

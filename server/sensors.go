package server

import (
	"context"
	"fmt"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/formulas"
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

// CreateSensor creates a sensor in the project, with an instance of a
// blueprint when the body names one.
func (s *Server) CreateSensor(ctx context.Context, req gen.CreateSensorRequestObject) (gen.CreateSensorResponseObject, error) {
	var attach *store.Attachment
	switch {
	case req.Body.BlueprintId != nil:
		a, err := s.attachment(ctx, req.OrgId, *req.Body.BlueprintId, deref(req.Body.Constants))
		if err != nil {
			return nil, err
		}
		attach = &a
	case req.Body.Constants != nil:
		return nil, apperr.Errorf(apperr.Invalid, "constants need a blueprint_id: a sensor without a blueprint has none")
	}
	sensor, err := s.store.CreateSensor(ctx, req.OrgId, req.ProjId, req.Body.Name, deref(req.Body.Description), attach)
	if err != nil {
		return nil, err
	}
	return gen.CreateSensor201JSONResponse(toSensor(sensor)), nil
}

// attachment makes a new instance of blueprint id of the organization.
func (s *Server) attachment(ctx context.Context, orgID, blueprintID int64, constants map[string]float64) (store.Attachment, error) {
	b, err := s.store.GetBlueprint(ctx, orgID, blueprintID)
	if apperr.CodeOf(err) == apperr.NotFound {
		// As another organization's id in the path would be: not found.
		return store.Attachment{}, &apperr.Error{Code: apperr.NotFound, Message: fmt.Sprintf("blueprint_id %d is not a blueprint of this organization", blueprintID),
			Details: map[string]any{"field": "/blueprint_id"}}
	}
	if err != nil {
		return store.Attachment{}, err
	}
	inst, err := b.Instantiate(constants)
	if err != nil {
		return store.Attachment{}, err
	}
	return store.Attachment{BlueprintID: b.ID, Instance: inst}, nil
}

// GetSensor returns a sensor: its formulas setup, with every id.
func (s *Server) GetSensor(ctx context.Context, req gen.GetSensorRequestObject) (gen.GetSensorResponseObject, error) {
	sensor, err := s.store.GetSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	return gen.GetSensor200JSONResponse(toSensor(sensor)), nil
}

// UpdateSensor changes the fields the body names. A blueprint other than
// the sensor's makes a new instance; the sensor's own keeps its instance and
// applies the constants.
func (s *Server) UpdateSensor(ctx context.Context, req gen.UpdateSensorRequestObject) (gen.UpdateSensorResponseObject, error) {
	key := sensorKey(req.OrgId, req.ProjId, req.SensorId)
	patch := store.SensorPatch{Name: req.Body.Name, Description: req.Body.Description}
	if req.Body.BlueprintId != nil || req.Body.Constants != nil {
		current, err := s.store.GetSensor(ctx, key)
		if err != nil {
			return nil, err
		}
		newBlueprint := req.Body.BlueprintId != nil &&
			(current.BlueprintID == nil || *current.BlueprintID != *req.Body.BlueprintId)
		switch {
		case newBlueprint:
			a, err := s.attachment(ctx, req.OrgId, *req.Body.BlueprintId, deref(req.Body.Constants))
			if err != nil {
				return nil, err
			}
			patch.Attach = &a
		case current.Instance == nil:
			return nil, apperr.Errorf(apperr.Invalid, "constants need a blueprint_id: the sensor has no blueprint")
		default:
			inst := current.Instance.Clone()
			if err := inst.SetConstants(store.Values(deref(req.Body.Constants))); err != nil {
				return nil, err
			}
			patch.Instance = &inst
		}
	}
	sensor, err := s.store.UpdateSensor(ctx, key, patch)
	if err != nil {
		return nil, err
	}
	return gen.UpdateSensor200JSONResponse(toSensor(sensor)), nil
}

// UpdateFormulas edits the formulas and constants of the sensor's instance,
// in place, after checking every formula of the result.
func (s *Server) UpdateFormulas(ctx context.Context, req gen.UpdateFormulasRequestObject) (gen.UpdateFormulasResponseObject, error) {
	sensor, err := s.editInstance(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), func(inst *store.Instance) error {
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
	sensor, err := s.editInstance(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), func(inst *store.Instance) error {
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
	key := sensorKey(req.OrgId, req.ProjId, req.SensorId)
	baselines := make([]store.Baseline, len(*req.Body))
	var sensor *store.Sensor // read once, for the first baseline chosen by reading
	for i, b := range *req.Body {
		if b.Reading != nil && sensor == nil {
			got, err := s.store.GetSensor(ctx, key)
			if err != nil {
				return nil, err
			}
			sensor = &got
		}
		var err error
		if baselines[i], err = s.baseline(ctx, sensor, i, b); err != nil {
			return nil, err
		}
	}
	updated, err := s.editInstance(ctx, key, func(inst *store.Instance) error {
		return inst.SetBaselines(baselines)
	})
	if err != nil {
		return nil, err
	}
	return gen.UpdateBaselines200JSONResponse(toSensor(updated)), nil
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
	sensor, err := s.store.SetSensorLinks(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), links)
	if err != nil {
		return nil, err
	}
	return gen.UpdateLinks200JSONResponse(toSensor(sensor)), nil
}

// baseline is b's values and instant; a baseline chosen by reading takes
// that reading's inputs, by key, from sensor. b is element index of the
// request.
func (s *Server) baseline(ctx context.Context, sensor *store.Sensor, index int, b gen.BaselineUpdate) (store.Baseline, error) {
	var out store.Baseline
	invalid := func(format string, args ...any) error {
		return &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("baseline %d: ", index) + fmt.Sprintf(format, args...), Details: map[string]any{"index": index}}
	}
	if (b.Values == nil) == (b.Reading == nil) {
		return out, invalid("give either values or reading, the datetime of a stored reading")
	}
	if b.From != nil {
		from, err := datetime.Parse(*b.From)
		if err != nil {
			return out, invalid("from: %v", err)
		}
		out.From = from
	}
	if b.Values != nil {
		if b.From == nil {
			return out, invalid("values need from, the instant they apply from")
		}
		out.Values = *b.Values
		return out, nil
	}
	at, err := datetime.Parse(*b.Reading)
	if err != nil {
		return out, invalid("reading: %v", err)
	}
	if b.From == nil {
		out.From = at
	}
	var found *store.Reading
	err = s.store.ListReadings(ctx, *sensor, store.ReadingQuery{From: at, To: at, Limit: 1}, func(r *store.Reading) error {
		found = r
		return nil
	})
	switch {
	case err != nil:
		return out, err
	case found == nil:
		return out, invalid("the sensor has no reading at %s", at.UTC().Format(time.RFC3339Nano))
	case sensor.Instance == nil:
		return out, nil // editInstance answers the missing blueprint
	}
	out.Values = map[string]float64{}
	for i, id := range found.InputIDs {
		for _, in := range sensor.Instance.Inputs {
			if in.ID == id {
				out.Values[in.Key] = found.Values[i]
			}
		}
	}
	return out, nil
}

// editInstance applies edit to a copy of the sensor's instance, checks the
// formulas of the result and saves it, unless it changed meanwhile.
func (s *Server) editInstance(ctx context.Context, key store.SensorKey, edit func(*store.Instance) error) (store.Sensor, error) {
	current, err := s.store.GetSensor(ctx, key)
	if err != nil {
		return store.Sensor{}, err
	}
	if current.Instance == nil {
		return store.Sensor{}, apperr.Errorf(apperr.Conflict, "sensor %d has no blueprint, so no formulas; give it a blueprint_id first", key.SensorID)
	}
	inst := current.Instance.Clone()
	if err := edit(&inst); err != nil {
		return store.Sensor{}, err
	}
	if _, err := formulas.Compile(instanceSpec(&inst)); err != nil {
		return store.Sensor{}, err
	}
	return s.store.UpdateSensor(ctx, key, store.SensorPatch{Instance: &inst})
}

// DeleteSensor deletes a sensor and its readings.
func (s *Server) DeleteSensor(ctx context.Context, req gen.DeleteSensorRequestObject) (gen.DeleteSensorResponseObject, error) {
	if err := s.store.DeleteSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId)); err != nil {
		return nil, err
	}
	return gen.DeleteSensor204Response{}, nil
}

package server

import (
	"cmp"
	"context"
	"fmt"
	"strconv"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/fileimport"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// ImportProfiles are the sensors' import profiles.
type ImportProfiles interface {
	GetImportProfile(ctx context.Context, key store.SensorKey) (store.ImportProfile, error)
	SetImportProfile(ctx context.Context, key store.SensorKey, spec store.ImportProfileSpec) (store.ImportProfile, error)
	DeleteImportProfile(ctx context.Context, key store.SensorKey) error
}

// GetImportProfile returns how a sensor's files are read.
func (s *Server) GetImportProfile(ctx context.Context, req gen.GetImportProfileRequestObject) (gen.GetImportProfileResponseObject, error) {
	p, err := s.ImportProfiles.GetImportProfile(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	return gen.GetImportProfile200JSONResponse(toImportProfile(p)), nil
}

// maxColumnName is the longest file column name a profile maps.
const maxColumnName = 200

// SetImportProfile gives a sensor an import profile, or replaces it.
func (s *Server) SetImportProfile(ctx context.Context, req gen.SetImportProfileRequestObject) (gen.SetImportProfileResponseObject, error) {
	spec := store.ImportProfileSpec{TZ: "UTC", Columns: deref(req.Body.Columns)}
	if req.Body.Tz != nil {
		spec.TZ = *req.Body.Tz
	}
	if _, err := fileimport.LoadZone(spec.TZ, map[string]any{"field": "tz"}); err != nil {
		return nil, err
	}
	if req.Body.Dst != nil {
		spec.DST = string(*req.Body.Dst)
	}
	for name := range spec.Columns {
		if name == "" || len(name) > maxColumnName {
			return nil, &apperr.Error{Code: apperr.Invalid, Details: map[string]any{"field": "columns"},
				Message: fmt.Sprintf("columns: a column's name has 1 to %d characters; %q has %d", maxColumnName, name, len(name))}
		}
	}
	p, err := s.ImportProfiles.SetImportProfile(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), spec)
	if err != nil {
		return nil, err
	}
	return gen.SetImportProfile200JSONResponse(toImportProfile(p)), nil
}

// DeleteImportProfile deletes a sensor's import profile.
func (s *Server) DeleteImportProfile(ctx context.Context, req gen.DeleteImportProfileRequestObject) (gen.DeleteImportProfileResponseObject, error) {
	if err := s.ImportProfiles.DeleteImportProfile(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId)); err != nil {
		return nil, err
	}
	return gen.DeleteImportProfile204Response{}, nil
}

func toImportProfile(p store.ImportProfile) gen.ImportProfile {
	out := gen.ImportProfile{SensorId: p.SensorID, Tz: p.TZ, Columns: make(map[string]string, len(p.Columns)), UpdatedAt: optionalDatetime(p.UpdatedAt)}
	for _, c := range p.Columns {
		out.Columns[c.Name] = cmp.Or(c.InputKey, strconv.FormatInt(c.InputID, 10))
	}
	if p.DST != "" {
		dst := gen.Dst(p.DST)
		out.Dst = &dst
	}
	return out
}

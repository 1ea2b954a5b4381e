package server

import (
	"context"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// Blueprints are an organization's blueprints as stored.
type Blueprints interface {
	ListBlueprints(ctx context.Context, orgID, after int64, limit int) ([]store.Blueprint, bool, error)
	GetBlueprint(ctx context.Context, orgID, id int64) (store.Blueprint, error)
	DeleteBlueprint(ctx context.Context, orgID, id int64) error
}

// BlueprintEdits save blueprints whose formulas compile.
type BlueprintEdits interface {
	CreateBlueprint(ctx context.Context, orgID int64, b store.Blueprint) (store.Blueprint, error)
	UpdateBlueprint(ctx context.Context, orgID, id int64, b store.Blueprint) (store.Blueprint, error)
}

// ListBlueprints returns a page of the organization's blueprints.
func (s *Server) ListBlueprints(ctx context.Context, req gen.ListBlueprintsRequestObject) (gen.ListBlueprintsResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	blueprints, more, err := s.Blueprints.ListBlueprints(ctx, req.OrgId, after, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListBlueprints200JSONResponse{Items: mapSlice(blueprints, toBlueprint)}
	if len(blueprints) > 0 {
		out.NextCursor = nextCursor(more, blueprints[len(blueprints)-1].ID)
	}
	return out, nil
}

// CreateBlueprint saves a blueprint whose formulas compile.
func (s *Server) CreateBlueprint(ctx context.Context, req gen.CreateBlueprintRequestObject) (gen.CreateBlueprintResponseObject, error) {
	created, err := s.BlueprintEdits.CreateBlueprint(ctx, req.OrgId, fromBlueprintWrite(*req.Body))
	if err != nil {
		return nil, err
	}
	return gen.CreateBlueprint201JSONResponse(toBlueprint(created)), nil
}

// GetBlueprint returns a blueprint.
func (s *Server) GetBlueprint(ctx context.Context, req gen.GetBlueprintRequestObject) (gen.GetBlueprintResponseObject, error) {
	b, err := s.Blueprints.GetBlueprint(ctx, req.OrgId, req.BlueprintId)
	if err != nil {
		return nil, err
	}
	return gen.GetBlueprint200JSONResponse(toBlueprint(b)), nil
}

// UpdateBlueprint replaces a blueprint with one whose formulas compile.
func (s *Server) UpdateBlueprint(ctx context.Context, req gen.UpdateBlueprintRequestObject) (gen.UpdateBlueprintResponseObject, error) {
	updated, err := s.BlueprintEdits.UpdateBlueprint(ctx, req.OrgId, req.BlueprintId, fromBlueprintWrite(*req.Body))
	if err != nil {
		return nil, err
	}
	return gen.UpdateBlueprint200JSONResponse(toBlueprint(updated)), nil
}

// DeleteBlueprint deletes a blueprint; its instances stay.
func (s *Server) DeleteBlueprint(ctx context.Context, req gen.DeleteBlueprintRequestObject) (gen.DeleteBlueprintResponseObject, error) {
	if err := s.Blueprints.DeleteBlueprint(ctx, req.OrgId, req.BlueprintId); err != nil {
		return nil, err
	}
	return gen.DeleteBlueprint204Response{}, nil
}

// fromBlueprintWrite converts a blueprint as a request writes it.
func fromBlueprintWrite(w gen.BlueprintWrite) store.Blueprint {
	b := store.Blueprint{Name: w.Name, Description: deref(w.Description)}
	for _, in := range w.Inputs {
		b.Inputs = append(b.Inputs, store.BlueprintInput{Key: in.Key, Name: in.Name, Unit: deref(in.Unit)})
	}
	for _, c := range deref(w.Constants) {
		b.Constants = append(b.Constants, store.BlueprintConstant{Key: c.Key, Name: c.Name, Unit: deref(c.Unit), Default: c.Default})
	}
	for _, o := range w.Outputs {
		b.Outputs = append(b.Outputs, store.BlueprintOutput{Key: o.Key, Name: o.Name, Unit: deref(o.Unit), Formula: o.Formula, Decimals: o.Decimals})
	}
	return b
}

func toBlueprint(b store.Blueprint) gen.Blueprint {
	out := gen.Blueprint{
		Id: b.ID, OrgId: b.OrgID, Name: b.Name, Description: b.Description,
		Inputs:    make([]gen.BlueprintInput, len(b.Inputs)),
		Constants: make([]gen.BlueprintConstant, len(b.Constants)),
		Outputs:   make([]gen.BlueprintOutput, len(b.Outputs)),
		CreatedAt: toDatetime(b.CreatedAt), UpdatedAt: toDatetime(b.UpdatedAt),
	}
	for i, in := range b.Inputs {
		out.Inputs[i] = gen.BlueprintInput{Key: in.Key, Name: in.Name, Unit: &in.Unit}
	}
	for i, c := range b.Constants {
		out.Constants[i] = gen.BlueprintConstant{Key: c.Key, Name: c.Name, Unit: &c.Unit, Default: c.Default}
	}
	for i, o := range b.Outputs {
		out.Outputs[i] = gen.BlueprintOutput{Key: o.Key, Name: o.Name, Unit: &o.Unit, Formula: o.Formula, Decimals: o.Decimals}
	}
	return out
}

package server

import (
	"context"

	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// ListBlueprints returns a page of the organization's blueprints.
func (s *Server) ListBlueprints(ctx context.Context, req gen.ListBlueprintsRequestObject) (gen.ListBlueprintsResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	blueprints, more, err := s.store.ListBlueprints(ctx, req.OrgId, after, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListBlueprints200JSONResponse{Items: mapSlice(blueprints, toBlueprint)}
	if len(blueprints) > 0 {
		out.NextCursor = nextCursor(more, blueprints[len(blueprints)-1].ID)
	}
	return out, nil
}

// CreateBlueprint checks a blueprint's formulas and saves it.
func (s *Server) CreateBlueprint(ctx context.Context, req gen.CreateBlueprintRequestObject) (gen.CreateBlueprintResponseObject, error) {
	b, err := fromBlueprintWrite(*req.Body)
	if err != nil {
		return nil, err
	}
	created, err := s.store.CreateBlueprint(ctx, req.OrgId, b)
	if err != nil {
		return nil, err
	}
	return gen.CreateBlueprint201JSONResponse(toBlueprint(created)), nil
}

// GetBlueprint returns a blueprint.
func (s *Server) GetBlueprint(ctx context.Context, req gen.GetBlueprintRequestObject) (gen.GetBlueprintResponseObject, error) {
	b, err := s.store.GetBlueprint(ctx, req.OrgId, req.BlueprintId)
	if err != nil {
		return nil, err
	}
	return gen.GetBlueprint200JSONResponse(toBlueprint(b)), nil
}

// UpdateBlueprint checks and replaces a blueprint.
func (s *Server) UpdateBlueprint(ctx context.Context, req gen.UpdateBlueprintRequestObject) (gen.UpdateBlueprintResponseObject, error) {
	b, err := fromBlueprintWrite(*req.Body)
	if err != nil {
		return nil, err
	}
	updated, err := s.store.UpdateBlueprint(ctx, req.OrgId, req.BlueprintId, b)
	if err != nil {
		return nil, err
	}
	return gen.UpdateBlueprint200JSONResponse(toBlueprint(updated)), nil
}

// DeleteBlueprint deletes a blueprint; its instances stay.
func (s *Server) DeleteBlueprint(ctx context.Context, req gen.DeleteBlueprintRequestObject) (gen.DeleteBlueprintResponseObject, error) {
	if err := s.store.DeleteBlueprint(ctx, req.OrgId, req.BlueprintId); err != nil {
		return nil, err
	}
	return gen.DeleteBlueprint204Response{}, nil
}

// fromBlueprintWrite converts a blueprint and compiles its formulas, so
// that nothing invalid is saved.
func fromBlueprintWrite(w gen.BlueprintWrite) (store.Blueprint, error) {
	b := store.Blueprint{Name: w.Name, Description: deref(w.Description)}
	spec := formulas.Spec{}
	for _, in := range w.Inputs {
		b.Inputs = append(b.Inputs, store.BlueprintInput{Key: in.Key, Name: in.Name, Unit: deref(in.Unit)})
		spec.Inputs = append(spec.Inputs, in.Key)
	}
	for _, c := range deref(w.Constants) {
		b.Constants = append(b.Constants, store.BlueprintConstant{Key: c.Key, Name: c.Name, Unit: deref(c.Unit), Default: c.Default})
		spec.Constants = append(spec.Constants, c.Key)
	}
	for _, o := range w.Outputs {
		b.Outputs = append(b.Outputs, store.BlueprintOutput{Key: o.Key, Name: o.Name, Unit: deref(o.Unit), Formula: o.Formula, Decimals: o.Decimals})
		spec.Outputs = append(spec.Outputs, formulas.Output{Key: o.Key, Formula: o.Formula})
	}
	if _, err := formulas.Compile(spec); err != nil {
		return store.Blueprint{}, err
	}
	return b, nil
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

// instanceSpec is what the formulas of an instance may use.
func instanceSpec(inst *store.Instance) formulas.Spec {
	spec := formulas.Spec{}
	for _, in := range inst.Inputs {
		spec.Inputs = append(spec.Inputs, in.Key)
	}
	for _, c := range inst.Constants {
		spec.Constants = append(spec.Constants, c.Key)
	}
	for _, o := range inst.Outputs {
		spec.Outputs = append(spec.Outputs, formulas.Output{Key: o.Key, Formula: o.Formula})
	}
	return spec
}

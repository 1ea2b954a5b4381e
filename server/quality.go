package server

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// Quality sets and lists the flags on readings and a sensor's validity
// checks, and reads the audit trail.
type Quality interface {
	SetFlag(ctx context.Context, key store.SensorKey, edit sensing.FlagEdit) (sensing.FlagResult, error)
	ClearFlags(ctx context.Context, key store.SensorKey, edit sensing.FlagEdit) (sensing.FlagResult, error)
	ListFlags(ctx context.Context, key store.SensorKey, q store.FlagQuery) ([]store.Flag, bool, error)
	Checks(ctx context.Context, key store.SensorKey) ([]store.Check, error)
	SetChecks(ctx context.Context, key store.SensorKey, specs []sensing.CheckSpec) ([]store.Check, error)
	ListAudit(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, bool, error)
}

// ListFlags returns a page of a sensor's flags.
func (s *Server) ListFlags(ctx context.Context, req gen.ListFlagsRequestObject) (gen.ListFlagsResponseObject, error) {
	p := req.Params
	after, limit, err := page(p.Limit, p.Cursor)
	if err != nil {
		return nil, err
	}
	q := store.FlagQuery{From: store.MinTime, To: store.MaxTime, Cleared: p.Cleared != nil && *p.Cleared, After: after, Limit: limit}
	if q.From, q.To, err = timeRange(p.DatetimeGte, nil, p.DatetimeLte, nil); err != nil {
		return nil, err
	}
	flags, more, err := s.Quality.ListFlags(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), q)
	if err != nil {
		return nil, err
	}
	out := gen.ListFlags200JSONResponse{Items: mapSlice(flags, toFlag)}
	if len(flags) > 0 {
		out.NextCursor = nextCursor(more, flags[len(flags)-1].ID)
	}
	return out, nil
}

// SetFlag flags a sensor's readings.
func (s *Server) SetFlag(ctx context.Context, req gen.SetFlagRequestObject) (gen.SetFlagResponseObject, error) {
	b := req.Body
	edit, err := flagEdit(ctx, b.From, b.To, b.Input, b.Reason)
	if err != nil {
		return nil, err
	}
	edit.Flag = string(b.Flag)
	res, err := s.Quality.SetFlag(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), edit)
	if err != nil {
		return nil, err
	}
	return gen.SetFlag201JSONResponse(toFlagResult(res)), nil
}

// ClearFlags clears the flags of a range of a sensor's readings.
func (s *Server) ClearFlags(ctx context.Context, req gen.ClearFlagsRequestObject) (gen.ClearFlagsResponseObject, error) {
	b := req.Body
	edit, err := flagEdit(ctx, b.From, b.To, b.Input, b.Reason)
	if err != nil {
		return nil, err
	}
	res, err := s.Quality.ClearFlags(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), edit)
	if err != nil {
		return nil, err
	}
	return gen.ClearFlags200JSONResponse(toFlagResult(res)), nil
}

// flagEdit is a flag's range, input and reason as a body gives them.
func flagEdit(ctx context.Context, from gen.Datetime, to *gen.Datetime, input *string, reason string) (sensing.FlagEdit, error) {
	edit := sensing.FlagEdit{Reason: reason, By: principalOf(ctx).UserID}
	var err error
	if edit.From, err = datetime.Parse(from); err != nil {
		return edit, &apperr.Error{Code: apperr.Invalid, Message: "from: " + err.Error(), Details: map[string]any{"field": "from"}}
	}
	edit.To = edit.From
	if to != nil {
		if edit.To, err = datetime.Parse(*to); err != nil {
			return edit, &apperr.Error{Code: apperr.Invalid, Message: "to: " + err.Error(), Details: map[string]any{"field": "to"}}
		}
	}
	if edit.To.Before(edit.From) {
		return edit, &apperr.Error{Code: apperr.Invalid, Message: "to is before from", Details: map[string]any{"field": "to"}}
	}
	if input != nil {
		edit.Input = *input
	}
	return edit, nil
}

func toFlagResult(res sensing.FlagResult) gen.FlagResult {
	return gen.FlagResult{Flags: mapSlice(res.Flags, toFlag), Readings: res.Readings}
}

func toFlag(f store.Flag) gen.Flag {
	out := gen.Flag{
		Id: f.ID, SensorId: f.SensorID, Flag: gen.FlagFlag(f.Flag), From: toDatetime(f.From), To: toDatetime(f.To),
		Reason: f.Reason, SetBy: f.SetBy, SetAt: toDatetime(f.SetAt), ClearedAt: optionalDatetime(f.ClearedAt),
		ClearedBy: f.ClearedBy, ClearReason: f.ClearReason,
	}
	if f.InputID != nil {
		id := strconv.FormatInt(*f.InputID, 10)
		out.Input = &id
	}
	if f.Check != nil {
		c := gen.FlagCheck(*f.Check)
		out.Check = &c
	}
	return out
}

// GetChecks returns a sensor's validity checks.
func (s *Server) GetChecks(ctx context.Context, req gen.GetChecksRequestObject) (gen.GetChecksResponseObject, error) {
	checks, err := s.Quality.Checks(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	return gen.GetChecks200JSONResponse(toCheckList(checks)), nil
}

// UpdateChecks replaces a sensor's validity checks.
func (s *Server) UpdateChecks(ctx context.Context, req gen.UpdateChecksRequestObject) (gen.UpdateChecksResponseObject, error) {
	specs := make([]sensing.CheckSpec, len(req.Body.Checks))
	for i, c := range req.Body.Checks {
		specs[i] = sensing.CheckSpec{Target: c.Target, Kind: string(c.Kind), Min: c.Min, Max: c.Max, Bound: c.Bound, Per: c.Per, Count: c.Count}
		if c.Flag != nil {
			specs[i].Flag = string(*c.Flag)
		}
	}
	checks, err := s.Quality.SetChecks(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), specs)
	if err != nil {
		return nil, err
	}
	return gen.UpdateChecks200JSONResponse(toCheckList(checks)), nil
}

func toCheckList(checks []store.Check) gen.CheckList {
	out := gen.CheckList{Checks: make([]gen.Check, len(checks))}
	for i, c := range checks {
		flag := gen.CheckFlag(c.Flag)
		out.Checks[i] = gen.Check{Target: c.Target, Kind: gen.CheckKind(c.Kind), Min: c.Min, Max: c.Max, Flag: &flag}
		switch c.Kind {
		case sensing.CheckSpike, sensing.CheckRate:
			bound := c.Bound
			out.Checks[i].Bound = &bound
			if c.Kind == sensing.CheckRate {
				per := int(c.Per)
				out.Checks[i].Per = &per
			}
		case sensing.CheckStuck:
			count := c.Count
			out.Checks[i].Count = &count
		}
	}
	return out
}

// ListProjectAudit returns a page of a project's audit trail.
func (s *Server) ListProjectAudit(ctx context.Context, req gen.ListProjectAuditRequestObject) (gen.ListProjectAuditResponseObject, error) {
	p := req.Params
	q, err := auditQuery(req.OrgId, p.Kind, p.DatetimeGte, p.DatetimeLte, p.Limit, p.Cursor)
	if err != nil {
		return nil, err
	}
	q.ProjectID = req.ProjId
	if p.SensorId != nil {
		q.SensorID = *p.SensorId
	}
	entries, more, err := s.Quality.ListAudit(ctx, q)
	if err != nil {
		return nil, err
	}
	return gen.ListProjectAudit200JSONResponse(toAuditPage(entries, more)), nil
}

// ListOrgAudit returns a page of an organization's audit trail.
func (s *Server) ListOrgAudit(ctx context.Context, req gen.ListOrgAuditRequestObject) (gen.ListOrgAuditResponseObject, error) {
	p := req.Params
	q, err := auditQuery(req.OrgId, p.Kind, p.DatetimeGte, p.DatetimeLte, p.Limit, p.Cursor)
	if err != nil {
		return nil, err
	}
	entries, more, err := s.Quality.ListAudit(ctx, q)
	if err != nil {
		return nil, err
	}
	return gen.ListOrgAudit200JSONResponse(toAuditPage(entries, more)), nil
}

func auditQuery(orgID int64, kinds *gen.AuditKind, gte, lte *gen.Bound, limit *int, cursor *string) (store.AuditQuery, error) {
	q := store.AuditQuery{OrgID: orgID}
	var err error
	if q.After, q.Limit, err = page(limit, cursor); err != nil {
		return q, err
	}
	if q.From, q.To, err = timeRange(gte, nil, lte, nil); err != nil {
		return q, err
	}
	if kinds != nil {
		q.Kinds = *kinds
	}
	return q, nil
}

func toAuditPage(entries []store.AuditEntry, more bool) gen.AuditPage {
	out := gen.AuditPage{Items: make([]gen.AuditEntry, len(entries))}
	for i, e := range entries {
		out.Items[i] = gen.AuditEntry{Id: e.ID, ProjectId: e.ProjectID, SensorId: e.SensorID, Kind: e.Kind, Action: e.Action,
			Actor: e.Actor, At: toDatetime(e.At)}
		if len(e.Before) > 0 {
			out.Items[i].Before = json.RawMessage(e.Before)
		}
		if len(e.After) > 0 {
			out.Items[i].After = json.RawMessage(e.After)
		}
	}
	if len(entries) > 0 {
		out.NextCursor = nextCursor(more, entries[len(entries)-1].ID)
	}
	return out
}

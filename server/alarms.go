package server

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// Alarms are a project's alarm levels, current alarms and their history,
// a sensor's rules as listed and its overdue rule.
type Alarms interface {
	ListAlarmLevels(ctx context.Context, orgID, projectID int64, after, limit int) ([]store.AlarmLevel, bool, error)
	CreateAlarmLevel(ctx context.Context, orgID, projectID int64, l store.AlarmLevel) (store.AlarmLevel, error)
	UpdateAlarmLevel(ctx context.Context, orgID, projectID, levelID int64, patch store.AlarmLevelPatch) (store.AlarmLevel, error)
	DeleteAlarmLevel(ctx context.Context, orgID, projectID, levelID int64) error
	ListAlarmRules(ctx context.Context, key store.SensorKey, after store.RuleKey, limit int) ([]store.AlarmRule, bool, *store.OverdueRule, error)
	ListAlarms(ctx context.Context, orgID, projectID int64, after store.AlarmKey, limit int) ([]store.Alarm, bool, error)
	AcknowledgeAlarm(ctx context.Context, orgID, projectID, alarmID, userID int64, note string) (store.Alarm, error)
	ListAlarmEvents(ctx context.Context, orgID, projectID int64, q store.AlarmEventQuery) ([]store.AlarmEvent, bool, error)
	GetOverdueRule(ctx context.Context, key store.SensorKey) (store.OverdueRule, error)
	SetOverdueRule(ctx context.Context, key store.SensorKey, level string, after time.Duration) (store.OverdueRule, error)
	DeleteOverdueRule(ctx context.Context, key store.SensorKey) error
}

// RuleEdits change a sensor's alarm rules, each rechecking its alarms.
type RuleEdits interface {
	CreateAlarmRule(ctx context.Context, key store.SensorKey, spec store.AlarmRuleSpec) (store.AlarmRule, error)
	UpdateAlarmRule(ctx context.Context, key store.SensorKey, ruleID int64, spec store.AlarmRuleSpec) (store.AlarmRule, error)
	DeleteAlarmRule(ctx context.Context, key store.SensorKey, ruleID int64) error
}

// ListAlarmLevels returns a page of the project's alarm levels; the cursor
// is the last level's rank.
func (s *Server) ListAlarmLevels(ctx context.Context, req gen.ListAlarmLevelsRequestObject) (gen.ListAlarmLevelsResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	levels, more, err := s.Alarms.ListAlarmLevels(ctx, req.OrgId, req.ProjId, int(min(after, math.MaxInt32)), limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListAlarmLevels200JSONResponse{Items: mapSlice(levels, toAlarmLevel)}
	if len(levels) > 0 {
		out.NextCursor = nextCursor(more, int64(levels[len(levels)-1].Rank))
	}
	return out, nil
}

// CreateAlarmLevel adds a level to the project.
func (s *Server) CreateAlarmLevel(ctx context.Context, req gen.CreateAlarmLevelRequestObject) (gen.CreateAlarmLevelResponseObject, error) {
	level, err := s.Alarms.CreateAlarmLevel(ctx, req.OrgId, req.ProjId, store.AlarmLevel{Name: req.Body.Name, Rank: req.Body.Rank, Colour: req.Body.Colour})
	if err != nil {
		return nil, err
	}
	return gen.CreateAlarmLevel201JSONResponse(toAlarmLevel(level)), nil
}

// UpdateAlarmLevel edits a level.
func (s *Server) UpdateAlarmLevel(ctx context.Context, req gen.UpdateAlarmLevelRequestObject) (gen.UpdateAlarmLevelResponseObject, error) {
	level, err := s.Alarms.UpdateAlarmLevel(ctx, req.OrgId, req.ProjId, req.LevelId,
		store.AlarmLevelPatch{Name: req.Body.Name, Rank: req.Body.Rank, Colour: req.Body.Colour})
	if err != nil {
		return nil, err
	}
	return gen.UpdateAlarmLevel200JSONResponse(toAlarmLevel(level)), nil
}

// DeleteAlarmLevel deletes a level no rule uses.
func (s *Server) DeleteAlarmLevel(ctx context.Context, req gen.DeleteAlarmLevelRequestObject) (gen.DeleteAlarmLevelResponseObject, error) {
	if err := s.Alarms.DeleteAlarmLevel(ctx, req.OrgId, req.ProjId, req.LevelId); err != nil {
		return nil, err
	}
	return gen.DeleteAlarmLevel204Response{}, nil
}

// ListAlarmRules returns a page of a sensor's rules; the cursor is the
// last rule's target and id.
func (s *Server) ListAlarmRules(ctx context.Context, req gen.ListAlarmRulesRequestObject) (gen.ListAlarmRulesResponseObject, error) {
	after, limit, err := keyPage(req.Params.Limit, req.Params.Cursor, 2)
	if err != nil {
		return nil, err
	}
	rules, more, overdue, err := s.Alarms.ListAlarmRules(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId),
		store.RuleKey{TargetID: after[0], ID: after[1]}, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListAlarmRules200JSONResponse{Items: mapSlice(rules, toAlarmRule)}
	if len(rules) > 0 {
		last := rules[len(rules)-1].Key()
		out.NextCursor = nextKeyCursor(more, last.TargetID, last.ID)
	}
	if overdue != nil {
		o := toOverdueRule(*overdue)
		out.Overdue = &o
	}
	return out, nil
}

// CreateAlarmRule adds a rule to a sensor; its alarms are rechecked at
// once.
func (s *Server) CreateAlarmRule(ctx context.Context, req gen.CreateAlarmRuleRequestObject) (gen.CreateAlarmRuleResponseObject, error) {
	rule, err := s.RuleEdits.CreateAlarmRule(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), alarmRuleSpec(*req.Body))
	if err != nil {
		return nil, err
	}
	return gen.CreateAlarmRule201JSONResponse(toAlarmRule(rule)), nil
}

// UpdateAlarmRule replaces a rule; its sensor's alarms are rechecked at
// once.
func (s *Server) UpdateAlarmRule(ctx context.Context, req gen.UpdateAlarmRuleRequestObject) (gen.UpdateAlarmRuleResponseObject, error) {
	rule, err := s.RuleEdits.UpdateAlarmRule(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), req.RuleId, alarmRuleSpec(*req.Body))
	if err != nil {
		return nil, err
	}
	return gen.UpdateAlarmRule200JSONResponse(toAlarmRule(rule)), nil
}

// DeleteAlarmRule deletes a rule; its sensor's alarms are rechecked at
// once.
func (s *Server) DeleteAlarmRule(ctx context.Context, req gen.DeleteAlarmRuleRequestObject) (gen.DeleteAlarmRuleResponseObject, error) {
	if err := s.RuleEdits.DeleteAlarmRule(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), req.RuleId); err != nil {
		return nil, err
	}
	return gen.DeleteAlarmRule204Response{}, nil
}

// alarmRuleSpec is a rule as the request writes it.
func alarmRuleSpec(in gen.AlarmRuleInput) store.AlarmRuleSpec {
	spec := store.AlarmRuleSpec{
		TargetKey: in.Target, Level: in.Level, Direction: string(in.Direction),
		Threshold: in.Threshold, Deadband: deref(in.Deadband), Persistence: 1,
	}
	if in.Persistence != nil {
		spec.Persistence = *in.Persistence
	}
	if in.Window != nil {
		spec.Window, spec.Per = int64(*in.Window), defaultRatePer
		if in.Per != nil {
			spec.Per = int64(*in.Per)
		}
	} else if in.Per != nil {
		spec.Per = int64(*in.Per) // refused: per needs a window
	}
	return spec
}

// defaultRatePer is a rate rule's unit of time when the request gives
// none, as the spec states it: a day.
const defaultRatePer = 86_400

// ListAlarms returns a page of the project's current alarms; the cursor
// is the last alarm's rank, since (in microseconds) and id.
func (s *Server) ListAlarms(ctx context.Context, req gen.ListAlarmsRequestObject) (gen.ListAlarmsResponseObject, error) {
	after, limit, err := keyPage(req.Params.Limit, req.Params.Cursor, 3)
	if err != nil {
		return nil, err
	}
	key := store.AlarmKey{Rank: int(min(max(after[0], 0), math.MaxInt32)), Since: time.UnixMicro(after[1]), ID: after[2]}
	list, more, err := s.Alarms.ListAlarms(ctx, req.OrgId, req.ProjId, key, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListAlarms200JSONResponse{Items: mapSlice(list, toAlarm)}
	if len(list) > 0 {
		last := list[len(list)-1].Key()
		out.NextCursor = nextKeyCursor(more, int64(last.Rank), last.Since.UnixMicro(), last.ID)
	}
	return out, nil
}

// AcknowledgeAlarm records that the caller has seen an alarm.
func (s *Server) AcknowledgeAlarm(ctx context.Context, req gen.AcknowledgeAlarmRequestObject) (gen.AcknowledgeAlarmResponseObject, error) {
	alarm, err := s.Alarms.AcknowledgeAlarm(ctx, req.OrgId, req.ProjId, req.AlarmId, principalOf(ctx).UserID, deref(req.Body.Note))
	if err != nil {
		return nil, err
	}
	return gen.AcknowledgeAlarm200JSONResponse(toAlarm(alarm)), nil
}

// ListAlarmEvents returns a page of the project's alarm history.
func (s *Server) ListAlarmEvents(ctx context.Context, req gen.ListAlarmEventsRequestObject) (gen.ListAlarmEventsResponseObject, error) {
	desc := req.Params.Order != nil && *req.Params.Order == gen.EventsNewestFirst
	cursor := req.Params.Cursor
	if cursor != nil {
		// A cursor carries its order: taken with the other one, its id
		// would silently skip the events on the wrong side of it.
		c, descCursor := strings.CutPrefix(*cursor, descCursorPrefix)
		if descCursor != desc {
			return nil, apperr.Errorf(apperr.Invalid, "cursor %q belongs to order=%s; pass it with that order, or start again without a cursor",
				*cursor, map[bool]string{false: "asc", true: "desc"}[descCursor])
		}
		cursor = &c
	}
	after, limit, err := page(req.Params.Limit, cursor)
	if err != nil {
		return nil, err
	}
	q := store.AlarmEventQuery{Desc: desc, After: after, Limit: limit, SensorID: deref(req.Params.SensorId), LevelID: deref(req.Params.LevelId)}
	if q.From, q.To, err = timeRange(req.Params.DatetimeGte, nil, nil, req.Params.DatetimeLt); err != nil {
		return nil, err
	}
	events, more, err := s.Alarms.ListAlarmEvents(ctx, req.OrgId, req.ProjId, q)
	if err != nil {
		return nil, err
	}
	out := gen.ListAlarmEvents200JSONResponse{Items: mapSlice(events, toAlarmEvent)}
	if len(events) > 0 {
		out.NextCursor = nextCursor(more, events[len(events)-1].ID)
		if desc && out.NextCursor != nil {
			*out.NextCursor = descCursorPrefix + *out.NextCursor
		}
	}
	return out, nil
}

// descCursorPrefix marks the cursors of the newest-first order; the
// oldest-first ones stay bare ids, as they were before the order existed.
const descCursorPrefix = "d"

func toAlarmLevel(l store.AlarmLevel) gen.AlarmLevel {
	return gen.AlarmLevel{Id: l.ID, Name: l.Name, Rank: l.Rank, Colour: l.Colour}
}

func toAlarmRule(r store.AlarmRule) gen.AlarmRule {
	direction := gen.AlarmRuleDirectionAbove
	if r.Below {
		direction = gen.AlarmRuleDirectionBelow
	}
	return gen.AlarmRule{
		Id: r.ID, SensorId: r.SensorID, Target: r.TargetKey, LevelId: r.LevelID, Level: r.LevelName, Rank: r.Rank,
		Direction: direction, Threshold: r.Threshold, Deadband: r.Deadband, Persistence: r.Persistence,
		Active: r.Active, CreatedAt: toDatetime(r.CreatedAt), Window: optionalInt(r.Window), Per: optionalInt(r.Per),
	}
}

// optionalInt is n, nil for 0.
func optionalInt(n int64) *int {
	if n == 0 {
		return nil
	}
	v := int(n)
	return &v
}

func toAlarm(a store.Alarm) gen.Alarm {
	out := gen.Alarm{
		Id: a.ID, SensorId: a.SensorID, Target: a.TargetKey, LevelId: a.LevelID, Level: a.LevelName, Rank: a.Rank, Colour: a.Colour,
		Since: toDatetime(a.Since), Value: a.Value, Acknowledged: a.AcknowledgedAt != nil,
		AcknowledgedAt: optionalDatetime(a.AcknowledgedAt), AcknowledgedBy: a.AcknowledgedBy,
	}
	if a.Note != "" {
		out.Note = &a.Note
	}
	return out
}

func toAlarmEvent(e store.AlarmEvent) gen.AlarmEvent {
	out := gen.AlarmEvent{
		Id: e.ID, SensorId: e.SensorID, Target: e.TargetKey, Kind: gen.AlarmEventKind(e.Kind), LevelId: e.LevelID, Level: e.LevelName,
		Value: e.Value, ReadingDatetime: optionalDatetime(e.ReadingAt), Late: e.Kind == "late", UserId: e.UserID,
		Coalesced: e.Coalesced, CreatedAt: toDatetime(e.CreatedAt),
	}
	if e.Note != "" {
		out.Note = &e.Note
	}
	return out
}

// GetOverdueRule returns a sensor's overdue rule.
func (s *Server) GetOverdueRule(ctx context.Context, req gen.GetOverdueRuleRequestObject) (gen.GetOverdueRuleResponseObject, error) {
	rule, err := s.Alarms.GetOverdueRule(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	return gen.GetOverdueRule200JSONResponse(toOverdueRule(rule)), nil
}

// SetOverdueRule gives a sensor an overdue rule, or replaces it.
func (s *Server) SetOverdueRule(ctx context.Context, req gen.SetOverdueRuleRequestObject) (gen.SetOverdueRuleResponseObject, error) {
	rule, err := s.Alarms.SetOverdueRule(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), req.Body.Level, time.Duration(req.Body.AfterSeconds)*time.Second)
	if err != nil {
		return nil, err
	}
	return gen.SetOverdueRule200JSONResponse(toOverdueRule(rule)), nil
}

// DeleteOverdueRule deletes a sensor's overdue rule.
func (s *Server) DeleteOverdueRule(ctx context.Context, req gen.DeleteOverdueRuleRequestObject) (gen.DeleteOverdueRuleResponseObject, error) {
	if err := s.Alarms.DeleteOverdueRule(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId)); err != nil {
		return nil, err
	}
	return gen.DeleteOverdueRule204Response{}, nil
}

func toOverdueRule(r store.OverdueRule) gen.OverdueRule {
	return gen.OverdueRule{SensorId: r.SensorID, LevelId: r.LevelID, Level: r.Level, AfterSeconds: int(r.After.Seconds()), CreatedAt: toDatetime(r.CreatedAt)}
}

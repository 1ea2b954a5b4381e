package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// The defaults of the spec's paging parameters.
const defaultPageLimit = 100

// page reads the limit and cursor of a list operation. A cursor is the last
// id of the previous page.
func page(limit *int, cursor *string) (after int64, n int, err error) {
	n = defaultPageLimit
	if limit != nil {
		n = *limit
	}
	if cursor != nil {
		after, err = strconv.ParseInt(*cursor, 10, 64)
		if err != nil || after < 0 {
			return 0, 0, apperr.Errorf(apperr.Invalid, "cursor %q is not one this service gave; pass next_cursor as it came", *cursor)
		}
	}
	return after, n, nil
}

// nextCursor is the cursor after lastID when more follow, else nil.
func nextCursor(more bool, lastID int64) *string {
	if !more {
		return nil
	}
	c := strconv.FormatInt(lastID, 10)
	return &c
}

// keyPage reads the limit and cursor of a list ordered by n keys: the
// cursor holds the last item's keys, joined by "_"; none gives n zeros.
func keyPage(limit *int, cursor *string, n int) (after []int64, size int, err error) {
	size = defaultPageLimit
	if limit != nil {
		size = *limit
	}
	after = make([]int64, n)
	if cursor == nil {
		return after, size, nil
	}
	parts := strings.Split(*cursor, "_")
	if len(parts) != n {
		return nil, 0, apperr.Errorf(apperr.Invalid, "cursor %q is not one this service gave; pass next_cursor as it came", *cursor)
	}
	for i, part := range parts {
		if after[i], err = strconv.ParseInt(part, 10, 64); err != nil {
			return nil, 0, apperr.Errorf(apperr.Invalid, "cursor %q is not one this service gave; pass next_cursor as it came", *cursor)
		}
	}
	return after, size, nil
}

// nextKeyCursor is keyPage's cursor after the item with keys when more
// follow, else nil.
func nextKeyCursor(more bool, keys ...int64) *string {
	if !more {
		return nil
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strconv.FormatInt(k, 10)
	}
	c := strings.Join(parts, "_")
	return &c
}

func toUser(u store.User) gen.User {
	return gen.User{Id: u.ID, Email: u.Email, Name: u.Name, CreatedAt: toDatetime(u.CreatedAt)}
}

func toMembership(m store.Membership) gen.Membership {
	return gen.Membership{OrgId: m.OrgID, OrgName: m.OrgName, Role: gen.Role(m.Role)}
}

func toMember(m store.Member) gen.Member {
	return gen.Member{UserId: m.UserID, Email: m.Email, Name: m.Name, Role: gen.Role(m.Role), CreatedAt: toDatetime(m.CreatedAt)}
}

func toToken(t store.Token) gen.Token {
	return gen.Token{
		Id:         t.ID,
		Name:       t.Name,
		Prefix:     t.Prefix,
		CreatedAt:  toDatetime(t.CreatedAt),
		LastUsedAt: optionalDatetime(t.LastUsedAt),
		ExpiresAt:  optionalDatetime(t.ExpiresAt),
		RevokedAt:  optionalDatetime(t.RevokedAt),
		Scope:      toTokenScope(t.TokenScope),
	}
}

func toTokenScope(s store.TokenScope) *gen.TokenScope {
	if !s.Scoped() {
		return nil
	}
	out := &gen.TokenScope{OrgId: s.OrgID}
	if s.ProjectID != 0 {
		out.ProjectId = &s.ProjectID
	}
	if len(s.SensorIDs) > 0 {
		out.SensorIds = &s.SensorIDs
	}
	if s.Role != "" {
		role := gen.Role(s.Role)
		out.Role = &role
	}
	if s.Device {
		out.Device = &s.Device
	}
	return out
}

func fromTokenScope(s *gen.TokenScope) store.TokenScope {
	if s == nil {
		return store.TokenScope{}
	}
	return store.TokenScope{
		OrgID:     s.OrgId,
		ProjectID: deref(s.ProjectId),
		SensorIDs: deref(s.SensorIds),
		Role:      store.Role(deref(s.Role)),
		Device:    deref(s.Device),
	}
}

func toProject(p store.Project) gen.Project {
	return gen.Project{
		Id:          p.ID,
		OrgId:       p.OrgID,
		Name:        p.Name,
		Description: p.Description,
		State:       gen.ProjectState(p.State),
		CreatedAt:   toDatetime(p.CreatedAt),
		UpdatedAt:   toDatetime(p.UpdatedAt),
	}
}

func toSensor(s store.Sensor) gen.Sensor {
	out := gen.Sensor{
		Id:                  s.ID,
		ProjectId:           s.ProjectID,
		Name:                s.Name,
		Description:         s.Description,
		CreatedAt:           toDatetime(s.CreatedAt),
		UpdatedAt:           toDatetime(s.UpdatedAt),
		BlueprintId:         s.BlueprintID,
		Inputs:              []gen.InstanceInput{},
		Outputs:             []gen.InstanceOutput{},
		Constants:           map[string]float64{},
		ConstantDefinitions: []gen.InstanceConstant{},
		Calibrations:        map[string][]gen.Calibration{},
	}
	inst := s.Instance
	if inst == nil {
		return out
	}
	out.FormulasVersion = inst.Version
	for _, in := range inst.Inputs {
		input := gen.InstanceInput{Id: in.ID, Key: in.Key, Name: in.Name, Unit: in.Unit}
		if l := in.Link; l != nil {
			staleness := int(l.Staleness / time.Second)
			input.Link = &gen.InputLink{SensorId: l.SensorID, Key: l.Key, Staleness: &staleness}
		}
		out.Inputs = append(out.Inputs, input)
		if len(in.Baselines) > 0 {
			if out.Baselines == nil {
				out.Baselines = &map[string][]gen.Calibration{}
			}
			(*out.Baselines)[in.Key] = toCalibrations(in.Baselines)
		}
	}
	for _, o := range inst.Outputs {
		out.Outputs = append(out.Outputs, gen.InstanceOutput{Id: o.ID, Key: o.Key, Name: o.Name, Unit: o.Unit, Formula: o.Formula, Decimals: o.Decimals})
	}
	for _, c := range inst.Constants {
		out.ConstantDefinitions = append(out.ConstantDefinitions,
			gen.InstanceConstant{Key: c.Key, Name: c.Name, Unit: c.Unit, Default: c.Default, Value: c.Value})
		switch {
		case c.Value != nil:
			out.Constants[c.Key] = *c.Value
		case c.Default != nil:
			out.Constants[c.Key] = *c.Default
		}
		if len(c.Calibrations) > 0 {
			out.Calibrations[c.Key] = toCalibrations(c.Calibrations)
		}
	}
	return out
}

func toCalibrations(cals []store.Calibration) []gen.Calibration {
	dated := make([]gen.Calibration, len(cals))
	for i, cal := range cals {
		dated[i] = gen.Calibration{From: toDatetime(cal.From), Value: cal.Value}
	}
	return dated
}

// toDatetime formats t as every response carries a datetime: UTC, truncated
// to the millisecond, with exactly three fractional digits. The generated
// types hold datetimes as this text (x-go-type: string in the spec), since
// encoding/json would write a time.Time with up to nine digits or none.
func toDatetime(t time.Time) gen.Datetime {
	return gen.Datetime(datetime.Append(make([]byte, 0, len("2006-01-02T15:04:05.000Z")), t))
}

func optionalDatetime(t *time.Time) *gen.Datetime {
	if t == nil {
		return nil
	}
	d := toDatetime(*t)
	return &d
}

func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

package server

import (
	"context"
	"strconv"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// Statuses are the sensors' status boards, with their newest readings'
// outputs.
type Statuses interface {
	SensorStatuses(ctx context.Context, q store.StatusQuery) ([]sensing.Status, bool, error)
}

// OrgStatus returns a page of the status of the sensors of the
// organization's active projects that the caller reaches.
func (s *Server) OrgStatus(ctx context.Context, req gen.OrgStatusRequestObject) (gen.OrgStatusResponseObject, error) {
	page, err := s.sensorStatuses(ctx, store.StatusQuery{OrgID: req.OrgId, ActiveOnly: true}, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return gen.OrgStatus200JSONResponse(page), nil
}

// ProjectStatus returns a page of the status of the project's sensors that
// the caller reaches.
func (s *Server) ProjectStatus(ctx context.Context, req gen.ProjectStatusRequestObject) (gen.ProjectStatusResponseObject, error) {
	q := store.StatusQuery{OrgID: req.OrgId, ProjectID: req.ProjId}
	if req.Params.SensorId != nil {
		q.SensorIDs = *req.Params.SensorId
	}
	page, err := s.sensorStatuses(ctx, q, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	return gen.ProjectStatus200JSONResponse(page), nil
}

// sensorStatuses reads a page of q, narrowed to the caller's scope (these
// operations are x-scope: narrows, so authenticate lets a scoped token
// through), with each newest reading's outputs.
func (s *Server) sensorStatuses(ctx context.Context, q store.StatusQuery, limit *int, cursor *string) (gen.SensorStatusPage, error) {
	var err error
	if q.After, q.Limit, err = page(limit, cursor); err != nil {
		return gen.SensorStatusPage{}, err
	}
	if scope := principalOf(ctx).Scope; scope.Scoped() {
		if scope.ProjectID != 0 {
			q.ProjectID = scope.ProjectID // authenticate refused any other in the path
		}
		if q.SensorIDs == nil {
			q.SensorIDs = scope.SensorIDs // authenticate refused any other asked for
		}
	}
	statuses, more, err := s.Statuses.SensorStatuses(ctx, q)
	if err != nil {
		return gen.SensorStatusPage{}, err
	}
	out := gen.SensorStatusPage{Items: mapSlice(statuses, toSensorStatus)}
	if len(statuses) > 0 {
		out.NextCursor = nextCursor(more, statuses[len(statuses)-1].Sensor.ID)
	}
	return out, nil
}

func toSensorStatus(st sensing.Status) gen.SensorStatus {
	out := gen.SensorStatus{
		SensorId:       st.Sensor.ID,
		SensorName:     st.Sensor.Name,
		ProjectId:      st.Sensor.ProjectID,
		Alarms:         st.Alarms,
		Unacknowledged: st.Unacknowledged,
		Overdue:        st.Overdue,
	}
	if st.Level != nil {
		out.Level = &gen.AlarmLevel{Id: st.Level.ID, Name: st.Level.Name, Rank: st.Level.Rank, Colour: st.Level.Colour}
	}
	if st.OverdueAfter != nil {
		seconds := int(st.OverdueAfter.Seconds())
		out.OverdueAfter = &seconds
	}
	if r := st.Reading; r != nil {
		w := st.Outputs
		reading := readingOf(st.Sensor.ID, *r)
		if ids := w.IDs(); len(ids) > 0 {
			w.Compute(r)
			outputs := make(gen.Values, len(ids))
			for k, id := range ids {
				if v, ok := w.Value(k); ok {
					outputs[strconv.FormatInt(id, 10)] = v
				}
			}
			reading.Outputs = &outputs
		}
		out.Reading = &reading
	}
	return out
}

package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
)

// ListProjectReadings returns the readings of several sensors of a project
// as one row per value, sensor by sensor, for charts of several sensors.
// The cursor is the last reading's sensor id and microsecond.
func (s *Server) ListProjectReadings(ctx context.Context, req gen.ListProjectReadingsRequestObject) (gen.ListProjectReadingsResponseObject, error) {
	p := req.Params
	q := sensing.ProjectQuery{Limit: defaultReadingsLimit, Outputs: p.Outputs != nil && *p.Outputs}
	var err error
	if q.From, q.To, err = timeRange(p.DatetimeGte, nil, nil, p.DatetimeLt); err != nil {
		return nil, err
	}
	if p.Sensors != nil {
		for _, field := range strings.Split(*p.Sensors, ",") {
			id, err := strconv.ParseInt(field, 10, 64)
			if err != nil {
				return nil, apperr.Errorf(apperr.Invalid, "sensors: %q is not a sensor id", field)
			}
			q.Sensors = append(q.Sensors, id)
		}
	}
	if p.Limit != nil {
		q.Limit = *p.Limit
	}
	if p.Cursor != nil {
		id, micro, _ := strings.Cut(*p.Cursor, "_")
		q.AfterSensor, _ = strconv.ParseInt(id, 10, 64)
		m, err := strconv.ParseInt(micro, 10, 64)
		if err != nil || q.AfterSensor == 0 {
			return nil, apperr.Errorf(apperr.Invalid, "cursor %q is not one this service gave; pass next_cursor as it came", *p.Cursor)
		}
		q.AfterTime = time.UnixMicro(m)
	}
	rows := &projectRows{b: []byte(`{"items":[`), key: p.Key, byName: byName(p.Keys)}
	lastSensor, lastTime, err := s.reads(ctx).ProjectReadings(ctx, req.OrgId, req.ProjId, q, rows)
	if err != nil {
		return nil, err
	}
	b := append(rows.b, ']')
	if lastSensor != 0 {
		b = append(b, `,"next_cursor":`...)
		b = strconv.AppendQuote(b, fmt.Sprintf("%d_%d", lastSensor, lastTime.UnixMicro()))
	}
	return jsonBody(append(b, "}\n"...)), nil
}

func (j jsonBody) VisitListProjectReadingsResponse(w http.ResponseWriter) error { return j.write(w) }

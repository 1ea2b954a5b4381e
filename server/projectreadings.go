package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
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

// projectRows encodes a project's readings as rows of one value each
// (sensing.ReadingSink), the values that key names alone when it is set.
type projectRows struct {
	b      []byte
	key    *string
	byName bool
	n      int // rows written

	sensorID int64
	name     []byte // the sensor's name, as JSON
	names    keyNames
}

func (p *projectRows) Sensor(sensor store.Sensor, _ *sensing.Outputs) error {
	name, err := json.Marshal(sensor.Name)
	if err != nil {
		return fmt.Errorf("encode sensor name: %w", err)
	}
	p.sensorID, p.name, p.names = sensor.ID, name, sensorNames(sensor, p.byName)
	return nil
}

func (p *projectRows) Reading(r *store.Reading, outputs *sensing.Outputs) error {
	for i, id := range r.InputIDs {
		p.row(r, id, r.Values[i])
	}
	if outputs != nil {
		outputs.Compute(r)
		for k, id := range outputs.IDs() {
			if v, ok := outputs.Value(k); ok {
				p.row(r, id, v)
			}
		}
	}
	return nil
}

func (p *projectRows) row(r *store.Reading, id int64, v float64) {
	key := p.names.appendKey(nil, id)
	if p.key != nil && string(key[1:len(key)-1]) != *p.key {
		return
	}
	if p.n > 0 {
		p.b = append(p.b, ',')
	}
	p.n++
	p.b = append(p.b, `{"sensor_id":`...)
	p.b = strconv.AppendInt(p.b, p.sensorID, 10)
	p.b = append(p.b, `,"sensor":`...)
	p.b = append(p.b, p.name...)
	p.b = append(p.b, `,"datetime":"`...)
	p.b = datetime.Append(p.b, r.Time)
	p.b = append(p.b, `","key":`...)
	p.b = append(p.b, key...)
	p.b = append(p.b, `,"value":`...)
	p.b = appendNumber(p.b, v)
	p.b = append(p.b, '}')
}

func (j jsonBody) VisitListProjectReadingsResponse(w http.ResponseWriter) error { return j.write(w) }

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// maxLongSensors is how many sensors listProjectReadings reads at once.
const maxLongSensors = 20

// ListProjectReadings returns the readings of several sensors of a project
// as one row per value, sensor by sensor, for charts of several sensors.
// The cursor is the last reading's sensor id and microsecond.
func (s *Server) ListProjectReadings(ctx context.Context, req gen.ListProjectReadingsRequestObject) (gen.ListProjectReadingsResponseObject, error) {
	p := req.Params
	from, to, err := timeRange(p.DatetimeGte, nil, nil, p.DatetimeLt)
	if err != nil {
		return nil, err
	}
	sensors, err := s.longSensors(ctx, req.OrgId, req.ProjId, p.Sensors)
	if err != nil {
		return nil, err
	}
	limit := defaultReadingsLimit
	if p.Limit != nil {
		limit = *p.Limit
	}
	var afterSensor int64
	var afterTime time.Time
	if p.Cursor != nil {
		id, micro, _ := strings.Cut(*p.Cursor, "_")
		afterSensor, _ = strconv.ParseInt(id, 10, 64)
		m, err := strconv.ParseInt(micro, 10, 64)
		if err != nil || afterSensor == 0 {
			return nil, apperr.Errorf(apperr.Invalid, "cursor %q is not one this service gave; pass next_cursor as it came", *p.Cursor)
		}
		afterTime = time.UnixMicro(m)
	}
	b := []byte(`{"items":[`)
	first, n, next := true, 0, ""
	for _, sensor := range sensors {
		if sensor.ID < afterSensor {
			continue
		}
		q := store.ReadingQuery{From: from, To: to, Limit: limit - n}
		if sensor.ID == afterSensor {
			q.From = later(from, afterTime.Add(time.Microsecond))
		}
		if q.From.After(q.To) {
			continue
		}
		name, err := json.Marshal(sensor.Name)
		if err != nil {
			return nil, fmt.Errorf("encode sensor name: %w", err)
		}
		names := newKeyNames(sensor, p.Keys)
		row := func(r *store.Reading, id int64, v float64) {
			key := names.appendKey(nil, id)
			if p.Key != nil && string(key[1:len(key)-1]) != *p.Key {
				return
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, `{"sensor_id":`...)
			b = strconv.AppendInt(b, sensor.ID, 10)
			b = append(b, `,"sensor":`...)
			b = append(b, name...)
			b = append(b, `,"datetime":"`...)
			b = datetime.Append(b, r.Time)
			b = append(b, `","key":`...)
			b = append(b, key...)
			b = append(b, `,"value":`...)
			b = appendNumber(b, v)
			b = append(b, '}')
		}
		var last time.Time
		count := 0
		err = s.listReadings(ctx, sensor, q, p.Outputs != nil && *p.Outputs, func(r *store.Reading, outputs *outputsWriter) error {
			for i, id := range r.InputIDs {
				row(r, id, r.Values[i])
			}
			if outputs != nil {
				outputs.Compute(r)
				for k, id := range outputs.outputIDs {
					if v, ok := outputs.Value(k); ok {
						row(r, id, v)
					}
				}
			}
			count++
			last = r.Time
			return nil
		})
		if err != nil {
			return nil, err
		}
		if n += count; n == limit {
			next = fmt.Sprintf("%d_%d", sensor.ID, last.UnixMicro())
			break
		}
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"next_cursor":`...)
		b = strconv.AppendQuote(b, next)
	}
	return jsonBody(append(b, "}\n"...)), nil
}

// longSensors is the sensors named (ascending, each checked to be in the
// project), or without names every sensor of the project, at most
// maxLongSensors of them either way.
func (s *Server) longSensors(ctx context.Context, orgID, projectID int64, list *string) ([]store.Sensor, error) {
	if list == nil {
		sensors, more, err := s.store.ListSensors(ctx, orgID, projectID, 0, maxLongSensors)
		if err != nil {
			return nil, err
		}
		if more {
			return nil, apperr.Errorf(apperr.Invalid, "the project has more than %d sensors: name at most %d in sensors", maxLongSensors, maxLongSensors)
		}
		return sensors, nil
	}
	var ids []int64
	for _, field := range strings.Split(*list, ",") {
		id, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return nil, apperr.Errorf(apperr.Invalid, "sensors: %q is not a sensor id", field)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	sensors := make([]store.Sensor, len(ids))
	for i, id := range ids {
		var err error
		if sensors[i], err = s.store.GetSensor(ctx, sensorKey(orgID, projectID, id)); err != nil {
			return nil, err
		}
	}
	return sensors, nil
}

func (j jsonBody) VisitListProjectReadingsResponse(w http.ResponseWriter) error { return j.write(w) }

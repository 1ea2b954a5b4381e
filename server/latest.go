package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
)

// LatestReadings returns the newest reading of each sensor of a project.
func (s *Server) LatestReadings(ctx context.Context, req gen.LatestReadingsRequestObject) (gen.LatestReadingsResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	opts := sensing.LatestOptions{Outputs: req.Params.Outputs != nil && *req.Params.Outputs, Instances: byName(req.Params.Keys)}
	latest, more, err := s.reads(ctx).LatestReadings(ctx, req.OrgId, req.ProjId, after, limit, opts)
	if err != nil {
		return nil, err
	}
	body := latestBodies.Get().(*pooledBody)
	b := append(body.b[:0], `{"items":[`...)
	var enc readingEncoder
	for i, l := range latest {
		if i > 0 {
			b = append(b, ',')
		}
		if i == 1 {
			// The items are alike: room for the rest at once, rather
			// than a copy of the body at every doubling.
			b = slices.Grow(b, len(b)*(len(latest)+1))
		}
		b = append(b, `{"sensor_id":`...)
		b = strconv.AppendInt(b, l.Sensor.ID, 10)
		b = append(b, `,"sensor_name":`...)
		if b, err = appendJSONString(b, l.Sensor.Name); err != nil {
			return nil, fmt.Errorf("encode sensor name: %w", err)
		}
		// A sensor without readings has no "reading": OpenAPI 3.0 cannot
		// declare a null for it.
		if l.Reading != nil {
			b = append(b, `,"reading":`...)
			enc.reset(l.Sensor.ID, newKeyNames(l.Sensor, req.Params.Keys))
			b = enc.append(b, l.Reading, l.Outputs, nil)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(latest) > 0 {
		if next := nextCursor(more, latest[len(latest)-1].Sensor.ID); next != nil {
			b = append(b, `,"next_cursor":`...)
			b = strconv.AppendQuote(b, *next)
		}
	}
	body.b, body.conn = append(b, "}\n"...), wholeConnOf(ctx)
	return latestBody{body}, nil
}

// latestBodies keep the bodies of latest values between requests: a
// project's is tens of kilobytes, made anew for each request it was most
// of the garbage the service collected while serving them.
var latestBodies = sync.Pool{New: func() any { return new(pooledBody) }}

// pooledBody is a body of latestBodies and the connection it goes out on
// in one system call (writeWhole), if any.
type pooledBody struct {
	b    []byte
	conn *wholeConn
}

// latestBody is a body of latestBodies, given back once written. One
// pointer, so that the response interface holds it without an allocation.
type latestBody struct{ *pooledBody }

func (l latestBody) VisitLatestReadingsResponse(w http.ResponseWriter) error {
	defer func() {
		l.conn = nil
		if cap(l.b) <= 4<<20 {
			latestBodies.Put(l.pooledBody)
		}
	}()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(l.b)))
	w.WriteHeader(http.StatusOK)
	return writeWhole(l.conn, w, l.b)
}

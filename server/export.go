package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// ExportReadings streams every reading of a range as CSV or NDJSON. The
// handler checks the request; the response runs the query and writes rows
// as they arrive, so memory stays constant whatever the range.
func (s *Server) ExportReadings(ctx context.Context, req gen.ExportReadingsRequestObject) (gen.ExportReadingsResponseObject, error) {
	sensor, err := s.store.GetSensor(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime} // no limit
	if p := req.Params.DatetimeGte; p != nil {
		q.From = latest(q.From, ceilMicro(*p))
	}
	if p := req.Params.DatetimeLt; p != nil {
		q.To = earliest(q.To, ceilMicro(*p).Add(-time.Microsecond))
	}
	var outputs *outputsWriter
	if p := req.Params.Outputs; p != nil && *p {
		outputs = s.newOutputsWriter(sensor)
	}
	e := &export{ctx: ctx, store: s.store, sensor: sensor, query: q, outputs: outputs}
	if req.Params.Format != nil && *req.Params.Format == gen.Ndjson {
		e.contentType, e.extension = "application/x-ndjson", "ndjson"
		return e, nil
	}
	e.contentType, e.extension = "text/csv; charset=utf-8", "csv"
	ids := instanceInputIDs(sensor)
	if sensor.Instance == nil && q.From.Compare(q.To) <= 0 {
		// The header row names every column before the first row, so a
		// sensor without a fixed set of inputs needs one pass to find them.
		if ids, err = s.store.InputIDs(ctx, sensor, q.From, q.To); err != nil {
			return nil, err
		}
	}
	e.csv = &csvColumns{inputIDs: ids, outputs: outputs}
	return e, nil
}

type export struct {
	ctx                    context.Context
	store                  Store
	sensor                 store.Sensor
	query                  store.ReadingQuery
	outputs                *outputsWriter
	csv                    *csvColumns // nil for NDJSON
	contentType, extension string
}

// flushEvery is how much the export buffers before it sends: rows reach the
// client as they are read, without a write per row.
const flushEvery = 32 << 10

// exportStall is how long an export may wait for a client that stopped
// reading. The server's write timeout bounds ordinary responses; an export
// moves its deadline on at every flush, so a long one that keeps flowing
// is not cut.
const exportStall = time.Minute

func (e *export) VisitExportReadingsResponse(w http.ResponseWriter) error {
	out := bufio.NewWriterSize(w, 2*flushEvery)
	flusher := http.NewResponseController(w)
	flush := func() error {
		if err := out.Flush(); err != nil {
			return err
		}
		// Not every writer can move its deadline (a test's recorder cannot);
		// then the server's write timeout stands.
		_ = flusher.SetWriteDeadline(time.Now().Add(exportStall))
		return flusher.Flush()
	}
	_ = flusher.SetWriteDeadline(time.Now().Add(exportStall))
	started := false
	start := func() error {
		started = true
		w.Header().Set("Content-Type", e.contentType)
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="sensor-%d.%s"`, e.sensor.ID, e.extension))
		w.WriteHeader(http.StatusOK)
		if e.csv != nil {
			_, err := out.Write(e.csv.appendHeader(out.AvailableBuffer()))
			return err
		}
		return nil
	}
	err := error(nil)
	if e.query.From.Compare(e.query.To) <= 0 {
		err = e.store.ListReadings(e.ctx, e.sensor, e.query, func(r *store.Reading) error {
			if !started {
				if err := start(); err != nil {
					return err
				}
			}
			var b []byte
			if e.csv != nil {
				b = e.csv.appendRow(out.AvailableBuffer(), r)
			} else {
				b = append(appendReading(out.AvailableBuffer(), e.sensor.ID, r, e.outputs), '\n')
			}
			if _, err := out.Write(b); err != nil {
				return err
			}
			if out.Buffered() >= flushEvery {
				return flush()
			}
			return nil
		})
	}
	switch {
	case err != nil && !started:
		return err // nothing sent yet: the client gets the JSON error
	case err != nil:
		// Part of the export is out: cut the connection, so that the client
		// sees a broken transfer rather than a file that looks complete.
		panic(http.ErrAbortHandler)
	case !started:
		if err := start(); err != nil {
			return err
		}
	}
	return out.Flush()
}

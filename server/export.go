package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// ExportReadings streams every reading of a range as CSV or NDJSON. The
// handler checks the request; the response reads the range in chunks and
// sends each before it reads the next, so that neither memory nor a
// database connection depends on the range or on the client's pace.
func (s *Server) ExportReadings(ctx context.Context, req gen.ExportReadingsRequestObject) (gen.ExportReadingsResponseObject, error) {
	// A streaming operation has no deadline of its own (databaseDeadline):
	// each of its queries has one.
	dbCtx, cancel := s.dbDeadline(ctx)
	defer cancel()
	sensor, err := s.store.GetSensor(dbCtx, sensorKey(req.OrgId, req.ProjId, req.SensorId))
	if err != nil {
		return nil, err
	}
	q := store.ReadingQuery{Limit: exportChunk}
	if q.From, q.To, err = timeRange(req.Params.DatetimeGte, nil, nil, req.Params.DatetimeLt); err != nil {
		return nil, err
	}
	var outputs *outputsWriter
	if p := req.Params.Outputs; p != nil && *p {
		outputs = s.newOutputsWriter(sensor, nil)
	}
	e := &export{ctx: ctx, server: s, sensor: sensor, query: q, outputs: outputs, names: newKeyNames(sensor, req.Params.Keys)}
	if req.Params.Format != nil && *req.Params.Format == gen.Ndjson {
		e.contentType, e.extension = "application/x-ndjson", "ndjson"
		return e, nil
	}
	e.contentType, e.extension = "text/csv; charset=utf-8", "csv"
	ids, err := s.sensorInputIDs(dbCtx, sensor)
	if err != nil {
		return nil, err
	}
	e.csv = &csvColumns{inputIDs: ids, outputs: outputs, names: e.names}
	return e, nil
}

// sensorInputIDs is every input a sensor's readings can have, ascending:
// its instance's, or, without a blueprint, every one its readings have had.
// The CSV header names them all before the first row, and aggregates with
// fill list them all in every bucket.
func (s *Server) sensorInputIDs(ctx context.Context, sensor store.Sensor) ([]int64, error) {
	if sensor.Instance != nil {
		return instanceInputIDs(sensor), nil
	}
	return s.reader(ctx).InputIDs(ctx, sensor)
}

type export struct {
	ctx                    context.Context // the request's, without a deadline
	server                 *Server
	sensor                 store.Sensor
	query                  store.ReadingQuery // Limit is the chunk's size
	outputs                *outputsWriter
	names                  keyNames
	csv                    *csvColumns // nil for NDJSON
	contentType, extension string
}

// exportChunk is how many readings an export reads per query. The
// connection goes back to the pool after each chunk, before the chunk is
// sent, so a client that reads slowly holds memory for one chunk and no
// connection at all. With at most about 100 inputs per reading a chunk
// encodes to a few MiB at worst, and each query takes milliseconds.
const exportChunk = 1000

// flushEvery is how much of a chunk the export sends at a time: rows reach
// the client in pieces of this size, and each piece moves the deadline on.
const flushEvery = 32 << 10

// exportStall is how long an export waits for a client that stopped
// reading: a client must take each 32 KiB piece within a minute (about
// 550 bytes a second) or be dropped. The server's write timeout bounds
// ordinary responses; an export moves its deadline on at every piece, so a
// long one that keeps flowing is not cut.
const exportStall = time.Minute

func (e *export) VisitExportReadingsResponse(w http.ResponseWriter) error {
	rc := http.NewResponseController(w)
	send := func(b []byte) error {
		for len(b) > 0 {
			n := min(len(b), flushEvery)
			// Not every writer can move its deadline (a test's recorder
			// cannot); then the server's write timeout stands.
			_ = rc.SetWriteDeadline(time.Now().Add(exportStall))
			if _, err := w.Write(b[:n]); err != nil {
				return err
			}
			if err := rc.Flush(); err != nil {
				return err
			}
			b = b[n:]
		}
		return nil
	}
	var buf []byte
	if e.csv != nil {
		buf = e.csv.appendHeader(buf)
	}
	q := e.query
	for started := false; ; started = true {
		n, last, err := e.readChunk(&buf, q)
		if err != nil && !started {
			return err // nothing sent yet: the client gets the JSON error
		}
		if err != nil {
			return &streamCut{err}
		}
		if !started {
			w.Header().Set("Content-Type", e.contentType)
			w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="sensor-%d.%s"`, e.sensor.ID, e.extension))
			w.WriteHeader(http.StatusOK)
		}
		if err := send(buf); err != nil {
			return &streamCut{fmt.Errorf("send export: %w", err)}
		}
		if n < q.Limit {
			return nil
		}
		// Keyset, in the order streamed: the next chunk starts just past
		// this one's last reading; stored times are whole microseconds.
		q.From = last.Add(time.Microsecond)
		buf = buf[:0]
	}
}

// readChunk appends to buf the encoding of the readings q selects, up to
// q.Limit of them, under the database deadline, and returns how many there
// were and the time of the last.
func (e *export) readChunk(buf *[]byte, q store.ReadingQuery) (n int, last time.Time, err error) {
	if q.From.After(q.To) {
		return 0, last, nil
	}
	ctx, cancel := e.server.dbDeadline(e.ctx)
	defer cancel()
	err = e.server.listReadings(ctx, e.sensor, q, e.outputs != nil, func(r *store.Reading, outputs *outputsWriter) error {
		if e.csv != nil {
			e.csv.outputs = outputs
			*buf = e.csv.appendRow(*buf, r)
		} else {
			*buf = append(appendReading(*buf, e.sensor.ID, r, outputs, e.names), '\n')
		}
		n++
		last = r.Time
		return nil
	})
	return n, last, err
}

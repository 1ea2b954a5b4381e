package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// ExportReadings streams every reading of a range as CSV or NDJSON. The
// handler checks the request; the response reads the range in chunks and
// sends each before it reads the next, so that neither memory nor a
// database connection depends on the range or on the client's pace.
func (s *Server) ExportReadings(ctx context.Context, req gen.ExportReadingsRequestObject) (gen.ExportReadingsResponseObject, error) {
	q := store.ReadingQuery{}
	var err error
	if q.From, q.To, err = timeRange(req.Params.DatetimeGte, nil, nil, req.Params.DatetimeLt); err != nil {
		return nil, err
	}
	ndjson := req.Params.Format != nil && *req.Params.Format == gen.Ndjson
	// A streaming operation has no deadline of its own (databaseDeadline):
	// each of its queries has one.
	dbCtx, cancel := s.dbDeadline(ctx)
	defer cancel()
	opts, err := readOptions(req.Params.Outputs, req.Params.Flags, req.Params.AsOf)
	if err != nil {
		return nil, err
	}
	chunks, err := s.reads(ctx).Export(dbCtx, sensorKey(req.OrgId, req.ProjId, req.SensorId), q, exportChunk, opts, !ndjson)
	if err != nil {
		return nil, err
	}
	e := &export{ctx: ctx, server: s, chunks: chunks, names: newKeyNames(chunks.Sensor, req.Params.Keys)}
	if ndjson {
		e.enc.reset(chunks.Sensor.ID, e.names)
		e.contentType, e.extension = "application/x-ndjson", "ndjson"
		return e, nil
	}
	e.contentType, e.extension = "text/csv; charset=utf-8", "csv"
	e.csv = &csvColumns{inputIDs: chunks.InputIDs, outputs: chunks.Outputs, names: e.names, flags: opts.Flags}
	return e, nil
}

type export struct {
	ctx                    context.Context // the request's, without a deadline
	server                 *Server
	chunks                 *sensing.Export
	names                  keyNames
	csv                    *csvColumns // nil for NDJSON
	enc                    readingEncoder
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
	for started := false; ; started = true {
		more, err := e.readChunk(&buf)
		if err != nil && !started {
			return err // nothing sent yet: the client gets the JSON error
		}
		if err != nil {
			return &streamCut{err}
		}
		if !started {
			w.Header().Set("Content-Type", e.contentType)
			w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="sensor-%d.%s"`, e.chunks.Sensor.ID, e.extension))
			w.WriteHeader(http.StatusOK)
		}
		if err := send(buf); err != nil {
			return &streamCut{fmt.Errorf("send export: %w", err)}
		}
		if !more {
			return nil
		}
		buf = buf[:0]
	}
}

// readChunk appends to buf the encoding of the next chunk's readings,
// read under the database deadline, and says whether more may follow: the
// next chunk starts just past this one's last reading.
func (e *export) readChunk(buf *[]byte) (bool, error) {
	ctx, cancel := e.server.dbDeadline(e.ctx)
	defer cancel()
	return e.chunks.Next(ctx, func(r *store.Reading, outputs *sensing.Outputs, marks []sensing.Mark) error {
		if e.csv != nil {
			e.csv.outputs = outputs
			*buf = e.csv.appendRow(*buf, r, marks)
		} else {
			*buf = append(e.enc.append(*buf, r, outputs, marks), '\n')
		}
		return nil
	})
}

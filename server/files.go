package server

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sensorreadings/readings/fileimport"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// previewReadings is how many readings a dry run shows.
const previewReadings = 10

// postFile stores the readings of a CSV or TOA5 file, all or none, a line
// at a time as it streams in (store.InsertReadingStream).
func (s *Server) postFile(ctx context.Context, req gen.PostReadingsRequestObject) (gen.PostReadingsResponseObject, error) {
	key := sensorKey(req.OrgId, req.ProjId, req.SensorId)
	dbCtx, cancel := s.dbDeadline(ctx)
	sensor, err := s.store.GetSensor(dbCtx, key)
	var profile *store.ImportProfile
	if err == nil {
		profile, err = s.store.ImportProfileOf(dbCtx, sensor)
	}
	cancel()
	if err != nil {
		return nil, err
	}
	p := req.Params
	opts, err := fileimport.OptionsOf(sensor.Instance, profile, fileimport.Overrides{TZ: p.Tz, DST: (*string)(p.Dst), Columns: p.Columns})
	if err != nil {
		return nil, err
	}
	parsed, err := fileimport.NewReader(sizedBody{req.Body}, opts)
	if err != nil {
		return nil, err
	}
	file := futureChecked{parsed, s.futureGuard()}
	var answer gen.FileImport
	if req.Params.DryRun != nil && *req.Params.DryRun {
		// The instants, to tell how many the file would replace: 8 bytes a
		// reading, bounded by the body's limit.
		preview := make([]gen.Reading, 0, previewReadings)
		var micros []int64
		for {
			r, err := file.Next()
			if err != nil {
				return nil, err
			}
			if r == nil {
				break
			}
			if len(preview) < previewReadings {
				preview = append(preview, readingOf(sensor.ID, *r))
			}
			micros = append(micros, r.Time.UnixMicro())
		}
		answer.Preview = &preview
		dbCtx, cancel := s.dbDeadline(ctx)
		would, err := s.store.CountStored(dbCtx, sensor, micros)
		cancel()
		if err != nil {
			return nil, err
		}
		answer.New, answer.Replaced = int64(would.New), int64(would.Replaced)
	} else {
		// The file streams into the database as it arrives, which the
		// database deadline cannot bound; taking the sensor's lock and
		// the statements after the file have it.
		written, err := s.store.InsertReadingStream(ctx, key, file, s.cfg.DBTimeout)
		if err != nil {
			return nil, err
		}
		s.deliverSoon(written)
		s.metrics.ingested.Add(float64(parsed.Readings()))
		answer.New, answer.Replaced = int64(written.New), int64(written.Replaced)
	}
	answer.Readings, answer.Skipped, answer.IgnoredColumns = int64(parsed.Readings()), int64(parsed.Skipped()), parsed.Ignored()
	if answer.IgnoredColumns == nil {
		answer.IgnoredColumns = []string{}
	}
	ok := gen.PostReadings200JSONResponse{Headers: gen.PostReadings200ResponseHeaders{XReadingsLSN: s.writePosition(ctx)}}
	if err := ok.Body.FromFileImport(answer); err != nil {
		return nil, err
	}
	return ok, nil
}

// futureChecked refuses the file's readings that the future guard
// refuses, naming their line.
type futureChecked struct {
	*fileimport.Reader
	guard futureGuard
}

func (f futureChecked) Next() (*store.Reading, error) {
	r, err := f.Reader.Next()
	if err == nil && r != nil && f.guard.refuses(r.Time) {
		where, details := f.Where()
		return nil, f.guard.error(r.Time, where, details)
	}
	return r, err
}

// readingOf is a reading as the API shows it.
func readingOf(sensorID int64, r store.Reading) gen.Reading {
	inputs := make(gen.Values, len(r.InputIDs))
	for i, id := range r.InputIDs {
		inputs[strconv.FormatInt(id, 10)] = r.Values[i]
	}
	return gen.Reading{Id: fmt.Sprintf("%d-%d", sensorID, r.Time.UnixMicro()), Datetime: toDatetime(r.Time), Inputs: inputs}
}

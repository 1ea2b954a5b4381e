package server

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sensorreadings/readings/fileimport"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// postFile stores the readings of a CSV or TOA5 file, all or none, a line
// at a time as it streams in, or with dry_run says what it would do.
func (s *Server) postFile(ctx context.Context, req gen.PostReadingsRequestObject) (gen.PostReadingsResponseObject, error) {
	p := req.Params
	dryRun := p.DryRun != nil && *p.DryRun
	done, err := s.Writes.ImportFile(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), sizedBody{req.Body},
		fileimport.Overrides{TZ: p.Tz, DST: (*string)(p.Dst), Columns: p.Columns}, dryRun)
	if err != nil {
		return nil, err
	}
	answer := gen.FileImport{
		Readings: int64(done.Readings), New: int64(done.New), Replaced: int64(done.Replaced),
		Skipped: int64(done.Skipped), IgnoredColumns: done.Ignored,
	}
	if answer.IgnoredColumns == nil {
		answer.IgnoredColumns = []string{}
	}
	if dryRun {
		preview := mapSlice(done.Preview, func(r store.Reading) gen.Reading { return readingOf(req.SensorId, r) })
		answer.Preview = &preview
	} else {
		s.metrics.ingested.Add(float64(done.Readings))
	}
	ok := gen.PostReadings200JSONResponse{}
	if err := ok.Body.FromFileImport(answer); err != nil {
		return nil, err
	}
	return ok, nil
}

// readingOf is a reading as the API shows it.
func readingOf(sensorID int64, r store.Reading) gen.Reading {
	inputs := make(gen.Values, len(r.InputIDs))
	for i, id := range r.InputIDs {
		inputs[strconv.FormatInt(id, 10)] = r.Values[i]
	}
	return gen.Reading{Id: fmt.Sprintf("%d-%d", sensorID, r.Time.UnixMicro()), Datetime: toDatetime(r.Time), Inputs: inputs}
}

package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones for files, whatever the host has installed

	"github.com/sensorreadings/readings/apperr"
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
	opts, err := fileOptionsOf(req.Params, sensor.Instance, profile)
	if err != nil {
		return nil, err
	}
	opts.future = s.futureGuard()
	file, err := newFileReader(req.Body, opts)
	if err != nil {
		return nil, err
	}
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
		s.metrics.ingested.Add(float64(file.readings))
		answer.New, answer.Replaced = int64(written.New), int64(written.Replaced)
	}
	answer.Readings, answer.Skipped, answer.IgnoredColumns = int64(file.readings), int64(file.skipped), file.ignored
	if answer.IgnoredColumns == nil {
		answer.IgnoredColumns = []string{}
	}
	ok := gen.PostReadings200JSONResponse{Headers: gen.PostReadings200ResponseHeaders{XReadingsLSN: s.writePosition(ctx)}}
	if err := ok.Body.FromFileImport(answer); err != nil {
		return nil, err
	}
	return ok, nil
}

// fileOptionsOf reads how to parse a file into inst's inputs: from the
// sensor's import profile, if it has one, and from the query, whose tz, dst
// and columns each override the profile's.
func fileOptionsOf(p gen.PostReadingsParams, inst *store.Instance, profile *store.ImportProfile) (fileOptions, error) {
	opts := fileOptions{instance: inst, loc: time.UTC}
	if profile != nil {
		opts.columns = make(map[string]int64, len(profile.Columns))
		for _, c := range profile.Columns {
			opts.columns[c.Name] = c.InputID
		}
		loc, err := loadZone(profile.TZ, map[string]any{"field": "tz"})
		if err != nil {
			return opts, err
		}
		opts.loc, opts.dst = loc, profile.DST
	}
	if p.Tz != nil {
		loc, err := loadZone(*p.Tz, map[string]any{"parameter": "tz"})
		if err != nil {
			return opts, err
		}
		opts.loc = loc
	}
	if p.Dst != nil {
		opts.dst = string(*p.Dst)
	}
	if p.Columns != nil {
		spec := map[string]string{}
		for pair := range strings.SplitSeq(*p.Columns, ",") {
			column, input, ok := strings.Cut(pair, ":")
			if _, twice := spec[column]; !ok || column == "" || twice {
				return opts, &apperr.Error{Code: apperr.Invalid, Details: map[string]any{"parameter": "columns"},
					Message: fmt.Sprintf("columns: %q is not column:input, or names its column twice; write columns=Freq_Avg:freq,Temp_Avg:temp", pair)}
			}
			spec[column] = input
		}
		columns, err := store.ResolveColumns(inst, spec)
		if err != nil {
			return opts, err
		}
		opts.columns = columns
	}
	return opts, nil
}

// loadZone loads an IANA time zone a client named; Invalid otherwise, with
// details saying where the name came from.
func loadZone(name string, details map[string]any) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" || name == "Local" {
		return nil, &apperr.Error{Code: apperr.Invalid, Details: details,
			Message: fmt.Sprintf("tz %q is not an IANA time zone such as Europe/Zurich, UTC or Etc/GMT-1", name)}
	}
	return loc, nil
}

// readingOf is a reading as the API shows it.
func readingOf(sensorID int64, r store.Reading) gen.Reading {
	inputs := make(gen.Values, len(r.InputIDs))
	for i, id := range r.InputIDs {
		inputs[strconv.FormatInt(id, 10)] = r.Values[i]
	}
	return gen.Reading{Id: fmt.Sprintf("%d-%d", sensorID, r.Time.UnixMicro()), Datetime: toDatetime(r.Time), Inputs: inputs}
}

package sensing

import (
	"context"
	"io"

	"github.com/sensorreadings/readings/fileimport"
	"github.com/sensorreadings/readings/store"
)

// FileImport is what a file did, or with a dry run would do.
type FileImport struct {
	Readings int      // the file's readings: lines with at least one input
	Skipped  int      // lines skipped because every input was missing
	Ignored  []string // columns that feed no input
	store.Written
	// Preview is a dry run's first readings, PreviewReadings at most.
	Preview []store.Reading
}

// PreviewReadings is how many readings a dry run shows.
const PreviewReadings = 10

// ImportFile stores the readings of a CSV or TOA5 file in the sensor, all
// or none, a line at a time as it streams in (Ingest), read by the
// sensor's import profile and o. With dryRun it stores nothing, and says
// what the file would do: the instants it would add and replace, and its
// first readings. Reading the sensor and its profile, and counting a dry
// run's instants, have the database timeout. It returns Ingest's errors,
// and fileimport's.
func (s *Service) ImportFile(ctx context.Context, key store.SensorKey, body io.Reader, o fileimport.Overrides, dryRun bool) (FileImport, error) {
	var done FileImport
	dbCtx, cancel := s.bounded(ctx)
	sensor, err := s.db.GetSensor(dbCtx, key)
	var profile *store.ImportProfile
	if err == nil {
		profile, err = s.db.ImportProfileOf(dbCtx, sensor)
	}
	cancel()
	if err != nil {
		return done, err
	}
	opts, err := fileimport.OptionsOf(sensor.Instance, profile, o)
	if err != nil {
		return done, err
	}
	file, err := fileimport.NewReader(body, opts)
	if err != nil {
		return done, err
	}
	if dryRun {
		done.Preview, done.Written, err = s.preview(ctx, sensor, file)
	} else {
		done.Written, err = s.Ingest(ctx, key, file)
	}
	done.Readings, done.Skipped, done.Ignored = file.Readings(), file.Skipped(), file.Ignored()
	return done, err
}

// preview reads the whole file, checked as Ingest checks it, and tells
// its first readings and how many of its instants are new to the sensor
// and stored already. It keeps the instants, 8 bytes a reading, bounded by
// the body's limit.
func (s *Service) preview(ctx context.Context, sensor store.Sensor, file Source) ([]store.Reading, store.Written, error) {
	check := s.checks()
	preview := make([]store.Reading, 0, PreviewReadings)
	var micros []int64
	for {
		r, err := file.Next()
		if err == nil && r != nil {
			err = check.reading(r, file)
		}
		if err != nil {
			return nil, store.Written{}, err
		}
		if r == nil {
			break
		}
		if len(preview) < PreviewReadings {
			preview = append(preview, store.Reading{Time: r.Time, InputIDs: append([]int64(nil), r.InputIDs...), Values: append([]float64(nil), r.Values...)})
		}
		micros = append(micros, r.Time.UnixMicro())
	}
	dbCtx, cancel := s.bounded(ctx)
	defer cancel()
	would, err := s.db.CountStored(dbCtx, sensor, micros)
	return preview, would, err
}

package sensing

import (
	"context"
	"time"

	"github.com/sensorreadings/readings/store"
)

// AggregateSink takes an aggregate's buckets as they are computed.
type AggregateSink interface {
	// Start is called once, before anything else, with the sensor, and
	// what the options asked for: every bucket of the range and every
	// input id the sensor can have (with fill), and the output ids (with
	// outputs). An error stops the aggregate before it reads a reading.
	Start(sensor store.Sensor, buckets []time.Time, inputIDs, outputIDs []int64) error
	store.BucketSink
}

// AggregateOptions say what an aggregate lists besides the buckets with
// readings and their inputs.
type AggregateOptions struct {
	Fill    bool // every bucket of the range, and every input in each
	Outputs bool // the outputs' statistics
}

// Aggregate cuts the sensor's readings that q selects into buckets and
// gives sink their counts and statistics, from the hourly rollups where
// they serve and the readings elsewhere (store.DB.AggregateBuckets), the
// outputs computed with the sensor's formulas and, for linked inputs, its
// sources' values over the whole range, each source read once. It says
// where the answer came from. It returns NotFound, and sink's errors.
func (s *Service) Aggregate(ctx context.Context, key store.SensorKey, q store.BucketQuery, opts AggregateOptions, sink AggregateSink) (store.RollupUse, error) {
	sensor, err := s.db.GetSensor(ctx, key)
	if err != nil {
		return "", err
	}
	var buckets []time.Time
	var inputIDs []int64
	if opts.Fill {
		if buckets, err = s.reader.Buckets(ctx, q); err != nil {
			return "", err
		}
		if inputIDs, err = s.inputIDs(ctx, sensor); err != nil {
			return "", err
		}
	}
	var outputs *Outputs
	var outputIDs []int64
	if opts.Outputs {
		// The readings stream, too many to hold: a linked input's sources
		// are read over the whole range, each once.
		links, err := s.sensorLinks(ctx, s.reader, sensor, q.From, q.To, nil, 0)
		if err != nil {
			return "", err
		}
		outputs = s.outputsOf(sensor, links)
		outputIDs = outputs.IDs()
	}
	if err := sink.Start(sensor, buckets, inputIDs, outputIDs); err != nil {
		return "", err
	}
	var o store.Outputs
	if outputs != nil {
		o = outputs
	}
	return s.reader.AggregateBuckets(ctx, sensor, q, o, sink)
}

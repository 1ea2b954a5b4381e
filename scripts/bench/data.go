package main

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/sensorreadings/readings/store"
)

// inputsPerReading is the inputs of every reading: ids 1 to 10.
const inputsPerReading = 10

// dataset is the readings every phase writes: perSensor readings for each
// sensor, one second apart, each with inputs 1..10 and random values. The
// values are generated once, before any timing, and kept in one slice so
// that a million readings cost 80 MB and no allocation per reading.
type dataset struct {
	sensors   []int64 // the sensors' ids
	perSensor int
	start     time.Time
	inputIDs  []int64   // shared by every reading
	values    []float64 // reading k's values are values[k*10 : k*10+10]
}

// dataStart is the first reading's instant: a fixed date, so that a run's
// datetimes are repeatable and well away from any partition boundary of
// "now".
var dataStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func newDataset(rng *rand.Rand, sensors []int64, perSensor int) *dataset {
	d := &dataset{
		sensors:   sensors,
		perSensor: perSensor,
		start:     dataStart,
		inputIDs:  make([]int64, inputsPerReading),
		values:    make([]float64, len(sensors)*perSensor*inputsPerReading),
	}
	for i := range d.inputIDs {
		d.inputIDs[i] = int64(i + 1)
	}
	for i := range d.values {
		d.values[i] = rng.Float64() * 1000
	}
	return d
}

func (d *dataset) len() int { return len(d.sensors) * d.perSensor }

// at is the instant of a sensor's i-th reading.
func (d *dataset) at(i int) time.Time { return d.start.Add(time.Duration(i) * time.Second) }

// reading is sensor s's i-th reading, sharing the dataset's arrays. Past
// the data set's end, readings repeat its values at later instants.
func (d *dataset) reading(s, i int) store.Reading {
	k := (s*d.perSensor + i%d.perSensor) * inputsPerReading
	return store.Reading{
		Time:     d.at(i),
		InputIDs: d.inputIDs,
		Values:   d.values[k : k+inputsPerReading : k+inputsPerReading],
	}
}

// span is readings [from, to) of the sensor at index sensor: one COPY or
// one POST.
type span struct {
	sensor   int
	from, to int
}

func (s span) len() int { return s.to - s.from }

// bySensor cuts the data into spans of size, a sensor's spans in a row: the
// order a loader that copies one sensor after another would use.
func (d *dataset) bySensor(size int) []span {
	var spans []span
	for s := range d.sensors {
		for from := 0; from < d.perSensor; from += size {
			spans = append(spans, span{s, from, min(from+size, d.perSensor)})
		}
	}
	return spans
}

// roundRobin cuts the data into spans of size, taking each sensor's next
// span in turn: the order of many sensors each posting their latest
// readings, so that concurrent requests write to different sensors.
func (d *dataset) roundRobin(size int) []span {
	var spans []span
	for from := 0; from < d.perSensor; from += size {
		for s := range d.sensors {
			spans = append(spans, span{s, from, min(from+size, d.perSensor)})
		}
	}
	return spans
}

// appendJSON appends the span as the body of a POST:
// [{"datetime":"2024-01-01T00:00:00Z","inputs":{"1":512.25,…}},…]. ids
// are the input ids to write, in place of the data set's 1..10 (a
// blueprint sensor's); nil keeps those.
func (d *dataset) appendJSON(b []byte, sp span, ids []int64) []byte {
	b = append(b, '[')
	for i := sp.from; i < sp.to; i++ {
		if i > sp.from {
			b = append(b, ',')
		}
		r := d.reading(sp.sensor, i)
		if ids != nil {
			r.InputIDs = ids
		}
		b = append(b, `{"datetime":"`...)
		b = r.Time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","inputs":`...)
		b = appendInputs(b, r)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendInputs appends a reading's inputs as a JSON object,
// {"1":512.25,"2":…}: the inputs of a POST and a row of the jsonb table.
func appendInputs(b []byte, r store.Reading) []byte {
	b = append(b, '{')
	for j, id := range r.InputIDs {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `":`...)
		b = strconv.AppendFloat(b, r.Values[j], 'f', -1, 64)
	}
	return append(b, '}')
}

// readings is the span's readings, sharing the dataset's arrays.
func (d *dataset) readings(sp span) []store.Reading {
	readings := make([]store.Reading, sp.len())
	for i := range readings {
		readings[i] = d.reading(sp.sensor, sp.from+i)
	}
	return readings
}

// readingColumns are the columns of readings, in the order of its COPYs.
var readingColumns = []string{"sensor_id", "datetime", "input_ids", "vals"}

// copySource feeds spans of the dataset to pgx's generic COPY, one row per
// reading, for the tables the service does not write itself.
type copySource struct {
	d    *dataset
	sp   span
	next int
	row  [4]any
}

func newCopySource(d *dataset, sp span) *copySource {
	return &copySource{d: d, sp: sp, next: sp.from - 1}
}

func (c *copySource) Next() bool {
	c.next++
	return c.next < c.sp.to
}

func (c *copySource) Values() ([]any, error) {
	r := c.d.reading(c.sp.sensor, c.next)
	c.row = [4]any{c.d.sensors[c.sp.sensor], r.Time, r.InputIDs, r.Values}
	return c.row[:], nil
}

func (c *copySource) Err() error { return nil }

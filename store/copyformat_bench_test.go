package store_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/batch"
	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// BenchmarkCopyFormat compares the COPY formats for a batch of 1,000 new
// readings of 10 inputs with values as the bench writes them (16-17
// digits), each COPY in a transaction of its own, by the CPU per reading
// of this process (encoding) and of PostgreSQL (storetest.ServerCPU), with
// commits that wait for the disk: the service's binary rows
// (store.CopyReadings: 314 bytes a reading, every array element with
// its length) against text rows (about 240 bytes, every value parsed by
// PostgreSQL's float8in) and CSV (the same text, quoted). Run it alone on
// the private cluster: PostgreSQL's CPU is the whole server's.
func BenchmarkCopyFormat(b *testing.B) {
	const size = 1000
	ctx := context.Background()
	pool := storetest.NewDurablePool(b)
	db := store.New(pool)
	org, _ := db.CreateOrg(ctx, "bench")
	project, _ := db.CreateProject(ctx, org.ID, "bench", "")
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	body := batchtest.BenchBodyOf(size)
	decoded, err := batch.Decode(bytes.NewReader(body), size, 100)
	if err != nil {
		b.Fatal(err)
	}
	// batchOf is the n-th batch, at instants of its own.
	batchOf := func(n int) []store.Reading {
		r := make([]store.Reading, size)
		for i := range r {
			r[i] = decoded[i]
			r[i].Time = start.Add(time.Duration(n*size+i) * time.Second)
		}
		return r
	}
	formats := []struct {
		name string
		copy func(tx pgx.Tx, sensorID int64, readings []store.Reading) error
	}{
		{"Binary", func(tx pgx.Tx, sensorID int64, readings []store.Reading) error {
			return store.CopyReadings(ctx, tx.Conn().PgConn(), sensorID, readings)
		}},
		{"Text", func(tx pgx.Tx, sensorID int64, readings []store.Reading) error {
			_, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(appendTextRows(nil, sensorID, readings, '\t', false)),
				"COPY readings (sensor_id, datetime, input_ids, vals) FROM STDIN")
			return err
		}},
		{"CSV", func(tx pgx.Tx, sensorID int64, readings []store.Reading) error {
			_, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(appendTextRows(nil, sensorID, readings, ',', true)),
				"COPY readings (sensor_id, datetime, input_ids, vals) FROM STDIN (FORMAT csv)")
			return err
		}},
	}
	for _, f := range formats {
		b.Run(f.name, func(b *testing.B) {
			sensor, err := db.CreateSensor(ctx, org.ID, project.ID, "bench "+f.name, "", nil)
			if err != nil {
				b.Fatal(err)
			}
			cpu, pg := batchtest.ProcessCPU(b), storetest.ServerCPU(b, pool)
			n := 0
			for b.Loop() {
				readings := batchOf(n)
				n++
				if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return f.copy(tx, sensor.ID, readings) }); err != nil {
					b.Fatal(err)
				}
			}
			total := float64(b.N * size)
			b.ReportMetric(float64((batchtest.ProcessCPU(b)-cpu).Nanoseconds())/total, "cpu-ns/reading")
			b.ReportMetric(float64((storetest.ServerCPU(b, pool)-pg).Nanoseconds())/total, "pg-cpu-ns/reading")
		})
	}
}

// appendTextRows appends readings as COPY's text rows (sep '\t') or CSV
// rows (sep ',', the arrays quoted), every value written with the digits
// that give it back exactly.
func appendTextRows(b []byte, sensorID int64, readings []store.Reading, sep byte, quote bool) []byte {
	array := func(b []byte, n int, elem func(b []byte, i int) []byte) []byte {
		if quote {
			b = append(b, '"')
		}
		b = append(b, '{')
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = elem(b, i)
		}
		b = append(b, '}')
		if quote {
			b = append(b, '"')
		}
		return b
	}
	for _, r := range readings {
		b = strconv.AppendInt(b, sensorID, 10)
		b = append(b, sep)
		b = r.Time.UTC().AppendFormat(b, "2006-01-02 15:04:05.999999Z07")
		b = append(b, sep)
		b = array(b, len(r.InputIDs), func(b []byte, i int) []byte { return strconv.AppendInt(b, r.InputIDs[i], 10) })
		b = append(b, sep)
		b = array(b, len(r.Values), func(b []byte, i int) []byte { return strconv.AppendFloat(b, r.Values[i], 'g', -1, 64) })
		b = append(b, '\n')
	}
	return b
}

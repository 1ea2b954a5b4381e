package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/store"
)

// storageRow is a line of the storage table.
type storageRow struct {
	layout      string
	bytesPerRow float64
	copyRate    float64       // readings/s
	read        time.Duration // p50 of a page
}

// A layout is one way to store a reading's inputs: a scratch table, the
// source that feeds its COPY and the query that reads a page of it.
type layout struct {
	name    string
	table   string
	create  string
	columns []string
	source  func(sp span) pgx.CopyFromSource
	read    string
	scan    func(rows pgx.Rows) error
}

// storageReads is the timed reads of a page per layout.
const storageReads = 100

// storageChoice is the second table: the readings table's arrays against
// a jsonb object of the same inputs, on the same readings, the claim of
// migrations/00002_projects.sql put to the test.
func (e *env) storageChoice(ctx context.Context, res *results) error {
	// Whole sensors, so that every read finds a full page.
	sensors := max(1, min(len(e.data.sensors), e.cfg.storageReadings/e.data.perSensor))
	var spans []span
	for _, sp := range e.data.bySensor(e.cfg.copyRows()) {
		if sp.sensor < sensors {
			spans = append(spans, sp)
		}
	}
	n := sensors * e.data.perSensor

	// Both tables are fed values already in the form their column takes,
	// so that neither COPY is charged for encoding in Go.
	docs := make([][]byte, 0, n)
	for s := range sensors {
		for i := range e.data.perSensor {
			docs = append(docs, appendInputs(nil, e.data.reading(s, i)))
		}
	}
	var (
		scanArrays struct {
			t    time.Time
			ids  []int64
			vals []float64
		}
		scanJSONB struct {
			t   time.Time
			doc []byte
		}
	)
	layouts := []layout{{
		name:    "`bigint[]` + `float8[]` (as `readings`)",
		table:   "bench_arrays",
		create:  "CREATE TABLE bench_arrays (LIKE readings INCLUDING ALL)",
		columns: readingColumns,
		source:  func(sp span) pgx.CopyFromSource { return newCopySource(e.data, sp) },
		read: `SELECT datetime, input_ids, vals FROM bench_arrays
WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3 ORDER BY datetime LIMIT $4 OFFSET $5`,
		scan: func(rows pgx.Rows) error {
			return rows.Scan(&scanArrays.t, &scanArrays.ids, &scanArrays.vals)
		},
	}, {
		name:  "`jsonb` (`{\"1\": v1, …}`)",
		table: "bench_jsonb",
		create: `CREATE TABLE bench_jsonb (
    sensor_id bigint      NOT NULL,
    datetime  timestamptz NOT NULL,
    inputs    jsonb       NOT NULL,
    PRIMARY KEY (sensor_id, datetime))`,
		columns: []string{"sensor_id", "datetime", "inputs"},
		source: func(sp span) pgx.CopyFromSource {
			return &jsonbSource{d: e.data, docs: docs, sp: sp, next: sp.from - 1}
		},
		read: `SELECT datetime, inputs FROM bench_jsonb
WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3 ORDER BY datetime LIMIT $4 OFFSET $5`,
		// The document as text, not decoded: what a service that passed
		// jsonb through would need. Decoding it in Go would cost more.
		scan: func(rows pgx.Rows) error { return rows.Scan(&scanJSONB.t, &scanJSONB.doc) },
	}}

	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for _, l := range layouts {
		r, err := e.measureLayout(ctx, conn, l, spans, n, sensors)
		if err != nil {
			return fmt.Errorf("%s: %w", l.table, err)
		}
		e.log.Info("storage", "table", l.table, "bytes_per_row", int(r.bytesPerRow), "copy_readings/s", int(r.copyRate), "read_p50", r.read)
		res.storage = append(res.storage, r)
	}
	return nil
}

// measureLayout creates the layout's table, copies the spans into it and
// times reads of a page.
func (e *env) measureLayout(ctx context.Context, conn *pgxpool.Conn, l layout, spans []span, n, sensors int) (storageRow, error) {
	r := storageRow{layout: l.name}
	if _, err := conn.Exec(ctx, l.create); err != nil {
		return r, err
	}
	e.checkpoint(ctx)
	start := time.Now()
	for _, sp := range spans {
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{l.table}, l.columns, l.source(sp)); err != nil {
			return r, fmt.Errorf("copy: %w", err)
		}
	}
	r.copyRate = rate(n, time.Since(start))

	// After VACUUM the visibility map and free space map exist, as they do
	// for any table autovacuum has visited: the size is the steady state.
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+l.table); err != nil {
		return r, err
	}
	var size int64
	if err := conn.QueryRow(ctx, "SELECT pg_total_relation_size($1::regclass)", l.table).Scan(&size); err != nil {
		return r, err
	}
	r.bytesPerRow = float64(size) / float64(n)

	// The same picks for both layouts, read once untimed so that both are
	// timed from shared buffers.
	rng := rand.New(rand.NewPCG(e.cfg.seed, 3))
	picks := make([]readPick, storageReads)
	for i := range picks {
		picks[i] = readPick{sensor: rng.IntN(sensors), from: e.data.at(rng.IntN(e.data.perSensor - pageSize + 1))}
	}
	var times []time.Duration
	for range 2 {
		times = times[:0]
		for _, p := range picks {
			start := time.Now()
			rows, err := conn.Query(ctx, l.read, e.data.sensors[p.sensor], p.from, store.MaxTime, pageSize, int64(0))
			if err != nil {
				return r, err
			}
			got := 0
			for rows.Next() {
				if err := l.scan(rows); err != nil {
					rows.Close()
					return r, err
				}
				got++
			}
			if err := rows.Err(); err != nil {
				return r, err
			}
			times = append(times, time.Since(start))
			if got != pageSize {
				return r, fmt.Errorf("read %d rows, want %d", got, pageSize)
			}
		}
	}
	r.read, _ = percentiles(times)
	return r, nil
}

// jsonbSource feeds the jsonb table: the reading's key and its inputs as a
// JSON document encoded beforehand.
type jsonbSource struct {
	d    *dataset
	docs [][]byte // by reading, sensor after sensor
	sp   span
	next int
	row  [3]any
}

func (j *jsonbSource) Next() bool {
	j.next++
	return j.next < j.sp.to
}

func (j *jsonbSource) Values() ([]any, error) {
	j.row = [3]any{j.d.sensors[j.sp.sensor], j.d.at(j.next), j.docs[j.sp.sensor*j.d.perSensor+j.next]}
	return j.row[:], nil
}

func (j *jsonbSource) Err() error { return nil }

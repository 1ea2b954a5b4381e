package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/store"
)

// rawIngest is row 1: the fastest PostgreSQL takes new readings from Go,
// one connection, the service's binary COPY (store.CopyReadings), no
// transaction around it but its own.
func (e *env) rawIngest(ctx context.Context, res *results) error {
	return e.rawRow(ctx, res, "1", "Raw ingest: the service's binary COPY (`store.CopyReadings`) into `readings`, 1 connection,",
		e.cfg.copyRows(), e.rawCopy, &res.rawIngest, "1 (the limit)")
}

// rawIngestBatched is row 1b: row 1 in transactions the size of the
// service's POSTs. Each POST is a transaction that must be durable before
// it is acknowledged; this is the limit for that, the yardstick of row 3.
func (e *env) rawIngestBatched(ctx context.Context, res *results) error {
	return e.rawRow(ctx, res, "1b", "Raw ingest as row 1, in the service's batches:",
		min(e.cfg.postBatch, e.cfg.perSensor()), e.rawCopy, &res.rawIngestBatched, "1 (the limit for row 3)")
}

// rawRow measures rows per batch with measure, keeps the rate in *rate and
// adds the row.
func (e *env) rawRow(ctx context.Context, res *results, id, what string, rows int,
	measure func(context.Context, int) (float64, error), rate *float64, ratio string) error {
	r, err := measure(ctx, rows)
	if err != nil {
		return err
	}
	*rate = r
	res.add(id, what+" "+e.copyBatchText(rows), perSecond(r), ratio)
	return nil
}

// rawIngestConcurrent is row 1c: the COPYs of row 1b sent as the service's
// clients send their POSTs, on as many connections at once. It separates
// what concurrent writers cost PostgreSQL from what the service costs.
func (e *env) rawIngestConcurrent(ctx context.Context, res *results) error {
	spans := e.data.roundRobin(e.cfg.postBatch)
	e.checkpoint(ctx)
	stop := e.clock()
	err := parallel(ctx, e.cfg.clients, len(spans), func(ctx context.Context, _, job int) error {
		conn, err := e.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		return e.copySpan(ctx, conn, spans[job])
	})
	elapsed := stop()
	if err != nil {
		return err
	}
	r := rate(e.data.len(), elapsed)
	res.rawIngestConcurrent = r
	res.rawIngestConcurrentCPU.add(e.timed[len(e.timed)-2:])
	e.log.Info("raw ingest", "rows_per_copy", e.cfg.postBatch, "connections", e.cfg.clients, "readings/s", int(r))
	res.add("1c", fmt.Sprintf("Raw ingest as row 1b, on %d connections at once, in the order of row 3's POSTs", e.cfg.clients),
		perSecond(r)+res.rawIngestConcurrentCPU.postgresPerReading(e.data.len()), ratio(r/res.rawIngestBatched, "(1b)"))
	return nil
}

func (e *env) rawCopy(ctx context.Context, rows int) (float64, error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	spans := e.data.bySensor(rows)
	e.checkpoint(ctx)
	stop := e.clock()
	for _, sp := range spans {
		if err := e.copySpan(ctx, conn, sp); err != nil {
			return 0, err
		}
	}
	rate := rate(e.data.len(), stop())
	e.log.Info("raw ingest", "rows_per_copy", rows, "readings/s", int(rate))
	return rate, nil
}

// copySpan COPYs a span of the data set into readings on conn, through the
// service's own encoder.
func (e *env) copySpan(ctx context.Context, conn *pgxpool.Conn, sp span) error {
	return store.CopyReadings(ctx, conn.Conn().PgConn(), e.data.sensors[sp.sensor], e.data.readings(sp))
}

// rawOverwrite is row 2: the service's storage of a batch
// (store.WriteReadings: the DELETE of the stored readings, chunk by chunk,
// the COPY) without the service, overwriting every reading of row 1.
func (e *env) rawOverwrite(ctx context.Context, res *results) error {
	return e.rawRow(ctx, res, "2", "Raw overwrite: the service's storage of a batch (`store.WriteReadings`: `DELETE` by chunk, COPY), 1 connection,",
		e.cfg.copyRows(), e.rawWrite, &res.rawOverwrite, "1 (the limit)")
}

// rawOverwriteBatched is row 2b: row 2 in the service's batches, the
// yardstick of row 4.
func (e *env) rawOverwriteBatched(ctx context.Context, res *results) error {
	return e.rawRow(ctx, res, "2b", "Raw overwrite as row 2, in the service's batches:",
		min(e.cfg.postBatch, e.cfg.perSensor()), e.rawWrite, &res.rawOverwriteBatched, "1 (the limit for row 4)")
}

// rawWrite writes the data set, already stored, again through
// store.WriteReadings, a transaction per span, and checks that every
// reading replaced a stored one.
func (e *env) rawWrite(ctx context.Context, rows int) (float64, error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	spans := e.data.bySensor(rows)
	// The raw COPYs kept no sensor's newest reading, which tells the
	// service's storage that a batch may overwrite.
	_, err = conn.Exec(ctx, `
INSERT INTO sensor_latest (sensor_id, datetime, input_ids, vals)
SELECT DISTINCT ON (sensor_id) sensor_id, datetime, input_ids, vals FROM readings ORDER BY sensor_id, datetime DESC
ON CONFLICT (sensor_id) DO UPDATE SET datetime = EXCLUDED.datetime, input_ids = EXCLUDED.input_ids, vals = EXCLUDED.vals`)
	if err != nil {
		return 0, err
	}
	e.checkpoint(ctx)
	stop := e.clock()
	for _, sp := range spans {
		err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{}, func(tx pgx.Tx) error {
			written, err := store.WriteReadings(ctx, tx, e.data.sensors[sp.sensor], e.data.readings(sp), false)
			if err != nil {
				return err
			}
			if written.Replaced != sp.len() {
				return fmt.Errorf("replaced %d readings of %d", written.Replaced, sp.len())
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("overwrite: %w", err)
		}
	}
	rate := rate(e.data.len(), stop())
	e.log.Info("raw overwrite", "rows_per_batch", rows, "readings/s", int(rate))
	return rate, nil
}

func (e *env) copyBatchText(rows int) string {
	text := fmt.Sprintf("%s rows per COPY", count(rows))
	if rows == e.cfg.perSensor() {
		text += " (one COPY per sensor)"
	}
	return text
}

// emptyReadings empties the table the raw phases filled, so that the
// service writes new readings into an empty table, as row 1 did.

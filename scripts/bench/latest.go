package main

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// Row 10c: latest values where readings span many chunks. The store keeps
// each sensor's newest reading in sensor_latest; the former query probed
// readings once a sensor, and on a hypertable that probe is planned over
// every chunk, whatever the sensor's own readings.
const (
	chunkSensors = 100 // sensors of the row's project
	chunkWeeks   = 100 // weeks their readings span: a chunk each at the default 7-day interval
	perWeek      = 10  // readings of a sensor in each week

	// formerLatestSQL is LatestReadings' query before sensor_latest.
	formerLatestSQL = `
SELECT s.id, r.datetime, r.input_ids, r.vals FROM sensors s
LEFT JOIN LATERAL (
    SELECT datetime, input_ids, vals FROM readings
    WHERE sensor_id = s.id ORDER BY datetime DESC LIMIT 1
) r ON true
WHERE s.project_id = $1 ORDER BY s.id LIMIT 1001`

	// refreshLatestSQL sets sensor_latest from readings, after writes
	// that bypass the store (the raw COPYs of the bench).
	refreshLatestSQL = `
INSERT INTO sensor_latest (sensor_id, datetime, input_ids, vals)
SELECT s.id, r.datetime, r.input_ids, r.vals FROM sensors s
CROSS JOIN LATERAL (
    SELECT datetime, input_ids, vals FROM readings
    WHERE sensor_id = s.id ORDER BY datetime DESC LIMIT 1
) r
ON CONFLICT (sensor_id) DO UPDATE SET datetime = EXCLUDED.datetime, input_ids = EXCLUDED.input_ids, vals = EXCLUDED.vals`
)

// latestOverChunks is row 10c: a project of 100 sensors whose readings,
// written through the domain, span 100 weeks; its latest values through
// store.LatestReadings, then through the former probe of readings.
func (e *env) latestOverChunks(ctx context.Context, res *results) error {
	db := store.New(e.pool)
	core := sensing.New(db, slog.New(slog.DiscardHandler), sensing.Config{})
	project, err := db.CreateProject(ctx, e.svc.org, "latest over chunks", "")
	if err != nil {
		return err
	}
	base := e.data.start.AddDate(-3, 0, 0)
	for s := range chunkSensors {
		sensor, err := db.CreateSensor(ctx, e.svc.org, project.ID, fmt.Sprintf("chunks %d", s), "", nil)
		if err != nil {
			return err
		}
		batch := make([]store.Reading, 0, chunkWeeks*perWeek)
		for w := range chunkWeeks {
			for i := range perWeek {
				r := e.data.reading(s%len(e.data.sensors), w*perWeek+i)
				r.Time = base.AddDate(0, 0, 7*w).Add(time.Duration(i) * time.Minute)
				batch = append(batch, r)
			}
		}
		key := store.SensorKey{OrgID: e.svc.org, ProjectID: project.ID, SensorID: sensor.ID}
		if _, err := core.Ingest(ctx, key, sensing.NewBatch(batch)); err != nil {
			return err
		}
	}
	if _, err := e.pool.Exec(ctx, "VACUUM ANALYZE readings, sensor_latest"); err != nil {
		return err
	}
	chunks := "a plain table"
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM show_chunks('readings')`).Scan(&n); err == nil {
		chunks = count(n) + " chunks"
	}

	const runs = 100
	timeRuns := func(query func() (int, error)) (p50, p99 time.Duration, err error) {
		times := make([]time.Duration, 0, runs)
		stop := e.clock()
		for i := range runs + 10 {
			start := time.Now()
			got, err := query()
			if err != nil {
				return 0, 0, err
			}
			if got != chunkSensors {
				return 0, 0, fmt.Errorf("latest: %d sensors, want %d", got, chunkSensors)
			}
			if i >= 10 {
				times = append(times, time.Since(start))
			}
		}
		stop()
		p50, p99 = percentiles(times)
		return p50, p99, nil
	}
	p50, p99, err := timeRuns(func() (int, error) {
		latest, _, err := db.LatestReadings(ctx, e.svc.org, project.ID, 0, 1000, false)
		return len(latest), err
	})
	if err != nil {
		return err
	}
	formerP50, _, err := timeRuns(func() (int, error) {
		rows, _ := e.pool.Query(ctx, formerLatestSQL, project.ID)
		ids, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (int64, error) {
			var (
				id   int64
				r    store.Reading
				when *time.Time
			)
			return id, row.Scan(&id, &when, &r.InputIDs, &r.Values)
		})
		return len(ids), err
	})
	if err != nil {
		return err
	}
	planning, execution, err := e.explainTimes(ctx, formerLatestSQL, project.ID)
	if err != nil {
		return err
	}
	e.log.Info("latest over chunks", "chunks", chunks, "p50", p50, "former_p50", formerP50, "former_planning", planning, "former_execution", execution)
	res.add("10c", fmt.Sprintf("Latest values over many chunks: `store.LatestReadings` of %d sensors whose readings span %d weeks (readings: %s); "+
		"the former per-sensor probe of readings on the same data: p50 %s, by EXPLAIN ANALYZE %s planning and %s execution",
		chunkSensors, chunkWeeks, chunks, duration(formerP50), planning, execution),
		latency(p50, p99), ratio(float64(formerP50)/float64(p50), "faster than the former probe, p50"))
	return nil
}

// refreshLatest sets sensor_latest from the readings the bench COPYed.
func (e *env) refreshLatest(ctx context.Context) error {
	_, err := e.pool.Exec(ctx, refreshLatestSQL)
	return err
}

var explainTime = regexp.MustCompile(`^(Planning|Execution) Time: ([0-9.]+) ms`)

// explainTimes runs EXPLAIN ANALYZE of query and returns its planning and
// execution times as PostgreSQL reports them.
func (e *env) explainTimes(ctx context.Context, query string, args ...any) (planning, execution string, err error) {
	rows, _ := e.pool.Query(ctx, "EXPLAIN (ANALYZE, SUMMARY) "+query, args...)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", "", err
	}
	for _, line := range lines {
		m := explainTime.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		ms, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return "", "", err
		}
		d := duration(time.Duration(ms * float64(time.Millisecond)))
		if m[1] == "Planning" {
			planning = d
		} else {
			execution = d
		}
	}
	if planning == "" || execution == "" {
		return "", "", fmt.Errorf("no planning and execution times in:\n%s", strings.Join(lines, "\n"))
	}
	return planning, execution, nil
}

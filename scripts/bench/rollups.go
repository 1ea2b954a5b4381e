package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/scripts/proccpu"
	"github.com/sensorreadings/readings/store"
)

// The rows of issue 18: aggregates over long ranges from the rollups, the
// readings alone as the fallback, and what the rollups cost ingest and
// an edit of the formulas.

// rollupYear is the year the long-range rows aggregate.
var rollupYear = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// longSensor is a sensor of the bench's blueprint whose readings the
// rollup rows aggregate.
type longSensor struct {
	blueprintSensor
	n       int           // readings
	spacing time.Duration // between them, from rollupYear on
}

// copyLong creates a sensor of the bench's blueprint and COPYs n readings
// of random values spacing apart into it, through the service's COPY, 10,000
// a transaction, generated as they go, and vacuums readings; then, with
// queue, queues its hours for the maintainer, as the migration queues
// readings stored before rollups.
func (e *env) copyLong(ctx context.Context, name string, n int, spacing time.Duration, queue bool) (longSensor, error) {
	b, err := e.newBlueprintSensor(ctx, name)
	if err != nil {
		return longSensor{}, err
	}
	s := longSensor{blueprintSensor: b, n: n, spacing: spacing}
	rng := rand.New(rand.NewPCG(e.cfg.seed, uint64(n)))
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return s, err
	}
	defer conn.Release()
	const batch = 10_000
	values := make([]float64, batch*inputsPerReading)
	readings := make([]store.Reading, batch)
	start := time.Now()
	for i := 0; i < n; i += batch {
		m := min(batch, n-i)
		for j := range m {
			v := values[j*inputsPerReading : (j+1)*inputsPerReading]
			for k := range v {
				v[k] = 1000 + rng.Float64()*2000
			}
			readings[j] = store.Reading{Time: rollupYear.Add(time.Duration(i+j) * spacing), InputIDs: b.inputIDs, Values: v}
		}
		err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{}, func(tx pgx.Tx) error {
			return store.CopyReadings(ctx, tx.Conn().PgConn(), b.id, readings[:m])
		})
		if err != nil {
			return s, fmt.Errorf("copy %s: %w", name, err)
		}
	}
	if err := e.recordInputs(ctx, b); err != nil {
		return s, err
	}
	e.log.Info("copied", "sensor", name, "readings", n, "took", time.Since(start).Round(time.Millisecond))
	// Vacuumed before its hours are queued, so that the maintainer's build
	// is timed from its start: with 13b's 5 GB it ran during the VACUUM,
	// and the wait after it was a fraction of the build.
	if _, err := e.pool.Exec(ctx, "VACUUM ANALYZE readings"); err != nil {
		return s, err
	}
	if queue {
		_, err = e.pool.Exec(ctx, `
INSERT INTO rollup_dirty (sensor_id, hour, inputs)
SELECT $1, h, true FROM generate_series($2::timestamptz, $3::timestamptz, interval '1 hour') AS h
ON CONFLICT DO NOTHING`, b.id, rollupYear, s.end().Add(-time.Nanosecond).Truncate(time.Hour))
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// queueHeld holds the sensor as a writer does, which the rollups'
// maintainer skips, then queues every hour of its readings; release lets
// the maintainer at them.
func (e *env) queueHeld(ctx context.Context, s longSensor) (release func() error, err error) {
	writer, err := e.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	release = func() error { return writer.Rollback(context.WithoutCancel(ctx)) }
	if _, err := writer.Exec(ctx, `SELECT FROM sensors WHERE id = $1 FOR NO KEY UPDATE`, s.id); err != nil {
		release()
		return nil, err
	}
	_, err = e.pool.Exec(ctx, `
INSERT INTO rollup_dirty (sensor_id, hour, inputs)
SELECT $1, h, true FROM generate_series($2::timestamptz, $3::timestamptz, interval '1 hour') AS h
ON CONFLICT DO NOTHING`, s.id, rollupYear, s.end().Add(-time.Nanosecond).Truncate(time.Hour))
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// end is the instant after the sensor's last reading, on the hour.
func (s longSensor) end() time.Time {
	return rollupYear.Add(time.Duration(s.n) * s.spacing).Truncate(time.Hour)
}

// waitRollups waits until the service's maintainer has emptied the
// sensor's queue, and says how long that took.
func (e *env) waitRollups(ctx context.Context, sensorID int64) (time.Duration, error) {
	start := time.Now()
	for {
		var queued int64
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM rollup_dirty WHERE sensor_id = $1`, sensorID).Scan(&queued); err != nil {
			return 0, err
		}
		if queued == 0 {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// getAggregates GETs the sensor's aggregates with query and says where the
// answer came from (X-Rollups).
func (e *env) getAggregates(ctx context.Context, s longSensor, query string, body *bytes.Buffer) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.svc.paths[s.index]+"/aggregates?"+query, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+e.svc.token)
	body.Reset()
	resp, err := e.svc.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET aggregates: %w", err)
	}
	defer resp.Body.Close()
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return "", fmt.Errorf("GET aggregates: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET aggregates: %s: %s", resp.Status, truncate(body.Bytes()))
	}
	return resp.Header.Get("X-Rollups"), nil
}

// yearQuery is the query of rows 13a and 13b: daily buckets of the
// sensor's whole range, in zone.
func yearQuery(s longSensor, zone string, outputs bool) string {
	return url.Values{
		"interval": {"1d"}, "fn": {"avg,min,max"}, "outputs": {fmt.Sprint(outputs)}, "tz": {zone},
		"datetime__gte": {rollupYear.Format(time.RFC3339)}, "datetime__lt": {s.end().Format(time.RFC3339)},
	}.Encode()
}

// timeAggregates GETs query n times after two warm-ups and returns the
// p50 and p99, where the last answer came from, and the CPU the service
// and PostgreSQL spent on the timed requests.
func (e *env) timeAggregates(ctx context.Context, s longSensor, query string, n int) (p50, p99 time.Duration, use string, cpu cpuSpent, err error) {
	var body bytes.Buffer
	for range 2 {
		if _, err := e.getAggregates(ctx, s, query, &body); err != nil {
			return 0, 0, "", cpu, err
		}
	}
	times := make([]time.Duration, 0, n)
	before := e.meter.sample()
	stop := e.clock()
	for range n {
		start := time.Now()
		if use, err = e.getAggregates(ctx, s, query, &body); err != nil {
			return 0, 0, "", cpu, err
		}
		times = append(times, time.Since(start))
	}
	stop()
	cpu.add([]cpuSample{before, e.meter.sample()})
	p50, p99 = percentiles(times)
	return p50, p99, use, cpu, nil
}

// perRequest is the CPU per request of n, as a figure's suffix.
func (c cpuSpent) perRequest(n int) string {
	if !c.known {
		return ""
	}
	ms := func(ticks int64) string {
		return fmt.Sprintf("%.1f ms", float64(ticks)/proccpu.ClockTicks/float64(n)*1e3)
	}
	return fmt.Sprintf("; CPU per request: service %s, PostgreSQL %s", ms(c.service), ms(c.postgres))
}

// target says how a p50 compares with its target.
func target(p50, limit time.Duration) string {
	verdict := "met"
	if p50 > limit {
		verdict = "not met"
	}
	return fmt.Sprintf("target ≤ %s: %.2f × (%s)", duration(limit), float64(p50)/float64(limit), verdict)
}

// yearZones are the zones of rows 13a–13a4, with the target of each:
// whole-hour offsets, and offsets of half and quarter hours, whose days
// end in the middle of UTC hours.
var yearZones = []struct {
	row, zone string
	limit     time.Duration
}{
	{"13a", "UTC", 30 * time.Millisecond},
	{"13a2", "Europe/Paris", 30 * time.Millisecond},
	{"13a3", "Asia/Kolkata", 100 * time.Millisecond},
	{"13a4", "Asia/Kathmandu", 100 * time.Millisecond},
}

// rollupYearMinutes is rows 13f, 13g, 13a–13a4 and 13d: a year of
// 1-minute readings of a 10-input, 5-output sensor, COPYed and its hours
// queued as an import queues them; the chart at once, before its rollups
// are built; the maintainer's time to build them; daily buckets of it
// from the rollups in zones of each kind; then a formula edit, the
// rebuild, and the answers meanwhile.
func (e *env) rollupYearMinutes(ctx context.Context, res *results) error {
	s, err := e.copyLong(ctx, "bench year of minutes", 525_600, time.Minute, false)
	if err != nil {
		return err
	}
	// Its hours queued, as the import's end leaves them, before the
	// maintainer has done anything: the sensor is held as a writer holds
	// it, which the maintainer skips.
	release, err := e.queueHeld(ctx, s)
	if err != nil {
		return err
	}
	var (
		body  bytes.Buffer
		fresh []time.Duration
		uses  = map[string]int{}
	)
	query := yearQuery(s, "UTC", true)
	before := e.meter.sample()
	for range 3 {
		start := time.Now()
		use, err := e.getAggregates(ctx, s, query, &body)
		if err != nil {
			return err
		}
		fresh = append(fresh, time.Since(start))
		uses[use]++
	}
	var cpu cpuSpent
	cpu.add([]cpuSample{before, e.meter.sample()})
	p50, _ := percentiles(fresh)
	res.add("13f", fmt.Sprintf("The chart of 13a right after the import of its year (525,600 readings COPYed, every hour queued), before the maintainer has run, 3 requests; `X-Rollups` %v", uses),
		fmt.Sprintf("p50 %s%s", duration(p50), cpu.perRequest(len(fresh))), target(p50, time.Second))

	// Released, as the import's transaction ends.
	if err := release(); err != nil {
		return err
	}
	before = e.meter.sample()
	wait := e.profile(ctx, "rollups-13g", 3*time.Second)
	built, err := e.waitRollups(ctx, s.id)
	if err != nil {
		return err
	}
	cpu = cpuSpent{}
	cpu.add([]cpuSample{before, e.meter.sample()})
	if err := wait(); err != nil {
		return err
	}
	res.add("13g", "The maintainer builds the rollups of 13a's year from scratch (8,784 hours queued), from the import's end (polled every 0.1 s)",
		duration(built)+cpu.perReading(s.n), target(built, 10*time.Second))

	for _, z := range yearZones {
		wait := e.profile(ctx, "rollups-"+z.row, 3*time.Second)
		p50, p99, use, cpu, err := e.timeAggregates(ctx, s, yearQuery(s, z.zone, true), 20)
		if err != nil {
			return err
		}
		if err := wait(); err != nil {
			return err
		}
		res.add(z.row, fmt.Sprintf("Aggregates from rollups: 365 daily buckets of a year of 1-minute readings (525,600, 10 inputs, 5 outputs), `tz=%s&fn=avg,min,max&outputs=true`, 20 requests, 1 client; `X-Rollups: %s`", z.zone, use),
			latency(p50, p99)+cpu.perRequest(20), target(p50, z.limit))
	}

	// An edit of a formula makes every hour's outputs stale at once. It
	// goes through the API, as a user's does, which wakes the service's
	// maintainer at once. The queue is polled apart from the requests
	// made meanwhile, so that the figure does not run on to the end of
	// the request that was under way when the queue emptied.
	before = e.meter.sample()
	wait = e.profile(ctx, "rollups-13d", 3*time.Second)
	digits := "x1^2 / 1001"
	edit, err := e.svc.api.UpdateFormulasWithResponse(ctx, e.svc.org, e.svc.project, s.id, client.FormulasUpdate{Outputs: &map[string]string{"digits": digits}})
	if err != nil {
		return fmt.Errorf("edit formulas: %w", err)
	}
	if edit.JSON200 == nil {
		return fmt.Errorf("edit formulas: %s", edit.Body)
	}
	edited := time.Now()
	var (
		during   []time.Duration
		asked    = make(chan error, 1)
		rebuilt  = make(chan struct{})
		mu       sync.Mutex
		askedFor bytes.Buffer
	)
	clear(uses)
	go func() {
		asked <- func() error {
			for {
				select {
				case <-rebuilt:
					return nil
				default:
				}
				start := time.Now()
				use, err := e.getAggregates(ctx, s, query, &askedFor)
				if err != nil {
					return err
				}
				mu.Lock()
				during = append(during, time.Since(start))
				uses[use]++
				mu.Unlock()
			}
		}()
	}()
	_, err = e.waitRollups(ctx, s.id)
	took := time.Since(edited)
	close(rebuilt)
	if err != nil {
		return err
	}
	if err := <-asked; err != nil {
		return err
	}
	cpu = cpuSpent{}
	cpu.add([]cpuSample{before, e.meter.sample()})
	if err := wait(); err != nil {
		return err
	}
	figure := duration(took)
	verdict := target(took, 5*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(during) > 0 {
		mid, _ := percentiles(during)
		figure += fmt.Sprintf("; meanwhile the request of 13a %d times, p50 %s, `X-Rollups` %v", len(during), duration(mid), uses)
		verdict += "; meanwhile " + target(mid, time.Second)
	}
	figure += cpu.perReading(s.n) + " (the requests' included)"
	res.add("13d", "Rebuild of the outputs' rollups after a formula edit of 13a's sensor through the API (8,784 hours queued), until its queue is empty (polled every 0.1 s), while one client asks for 13a back to back", figure, verdict)
	return nil
}

// rollupRawFallback is row 13e: the readings alone, 1-day buckets over
// 1,000,000 readings of one sensor (116 days at 10 s), in a zone the
// rollups cannot serve; then, on TimescaleDB, rows 13ec and 13e2c: the
// same with the readings' chunks compressed, as a deployment's
// compression policy leaves readings older than its compress_after.
func (e *env) rollupRawFallback(ctx context.Context, res *results) error {
	s, err := e.copyLong(ctx, "bench million", 1_000_000, 10*time.Second, false)
	if err != nil {
		return err
	}
	// Its hours queued, as an import queues them, while the sensor is
	// held as a writer holds it: the maintainer skips it, so the answers
	// come from the readings alone, and it does not compete with them.
	release, err := e.queueHeld(ctx, s)
	if err != nil {
		return err
	}
	defer release()
	defer e.pool.Exec(context.WithoutCancel(ctx), `DELETE FROM rollup_dirty WHERE sensor_id = $1`, s.id)
	answers := map[bool][]byte{} // by outputs
	if err := e.timeRawFallback(ctx, res, s, "", answers); err != nil {
		return err
	}
	chunks, err := e.compressAsThePolicy(ctx, s)
	// Decompressed again after, so that what follows reads what it
	// always read.
	defer func() {
		for _, c := range chunks {
			if _, err := e.pool.Exec(context.WithoutCancel(ctx), `SELECT decompress_chunk($1::regclass, true)`, c); err != nil {
				e.log.Error("decompress", "chunk", c, "err", err)
			}
		}
	}()
	if err != nil || len(chunks) == 0 {
		return err
	}
	return e.timeRawFallback(ctx, res, s, "c", answers)
}

// timeRawFallback measures 13e (outputs=false) and 13e2 (outputs=true) on
// the sensor s, the rows' names ending in suffix. It keeps each answer in
// answers, or, where answers has one already (the same readings before
// their compression), fails unless it is that answer to the byte.
func (e *env) timeRawFallback(ctx context.Context, res *results, s longSensor, suffix string, answers map[bool][]byte) error {
	how := ""
	if suffix != "" {
		how = ", its chunks compressed as the policy compresses them"
	}
	for _, outputs := range []bool{false, true} {
		row := map[bool]string{false: "13e", true: "13e2"}[outputs] + suffix
		wait := e.profile(ctx, "rollups-"+row, 5*time.Second)
		p50, p99, use, cpu, err := e.timeAggregates(ctx, s, yearQuery(s, "Asia/Kolkata", outputs), 5)
		if err != nil {
			return err
		}
		if err := wait(); err != nil {
			return err
		}
		var body bytes.Buffer
		if _, err := e.getAggregates(ctx, s, yearQuery(s, "Asia/Kolkata", outputs), &body); err != nil {
			return err
		}
		if before, ok := answers[outputs]; ok && !bytes.Equal(before, body.Bytes()) {
			return fmt.Errorf("%s: the answer is not %s's", row, strings.TrimSuffix(row, suffix))
		}
		answers[outputs] = body.Bytes()
		limit := map[bool]time.Duration{false: 500 * time.Millisecond, true: time.Second}[outputs]
		res.add(row,
			fmt.Sprintf("Aggregates from the readings alone%s: 1-day buckets of 1,000,000 readings (116 days at 10 s, 10 inputs), `tz=Asia/Kolkata`, `fn=avg,min,max&outputs=%t`, 5 requests; `X-Rollups: %s`", how, outputs, use),
			latency(p50, p99)+cpu.perRequest(5), target(p50, limit))
	}
	return nil
}

// compressAsThePolicy compresses, on TimescaleDB, the chunks of s's
// readings that the compression policy (held for the run) would have
// compressed by now, being older than its compress_after: in a
// deployment, where it runs twice a day, 13e's readings of 2025 are all
// compressed. It returns the chunks it compressed; none on plain
// PostgreSQL. The chunks hold other sensors' readings of those weeks too
// (13a's year of minutes), whose phases are over.
func (e *env) compressAsThePolicy(ctx context.Context, s longSensor) ([]string, error) {
	var timescale bool
	if err := e.pool.QueryRow(ctx, `SELECT to_regclass('timescaledb_information.jobs') IS NOT NULL`).Scan(&timescale); err != nil || !timescale {
		return nil, err
	}
	rows, _ := e.pool.Query(ctx, `
SELECT format('%I.%I', c.chunk_schema, c.chunk_name)
FROM timescaledb_information.chunks c, timescaledb_information.jobs j
WHERE c.hypertable_name = 'readings' AND j.hypertable_name = 'readings' AND j.proc_name = 'policy_compression'
    AND NOT c.is_compressed AND c.range_end > $1 AND c.range_start < $2
    AND c.range_end <= now() - (j.config->>'compress_after')::interval
ORDER BY c.range_start`, rollupYear, s.end())
	chunks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("chunks to compress: %w", err)
	}
	start := time.Now()
	for i, c := range chunks {
		if _, err := e.pool.Exec(ctx, `SELECT compress_chunk($1::regclass)`, c); err != nil {
			return chunks[:i], fmt.Errorf("compress %s: %w", c, err)
		}
	}
	if _, err := e.pool.Exec(ctx, "ANALYZE readings"); err != nil {
		return chunks, err
	}
	e.log.Info("compressed", "chunks", len(chunks), "took", time.Since(start).Round(time.Millisecond))
	return chunks, nil
}

// rollupIngest is row 13c: the service's storage of batches of 1,000 new
// readings (store.WriteReadings) with the queueing of their hours for the
// rollups, against without, in alternating batches on one connection,
// compared at the median batch.
func (e *env) rollupIngest(ctx context.Context, res *results) error {
	with, err := e.newBlueprintSensor(ctx, "bench ingest with rollups")
	if err != nil {
		return err
	}
	without, err := e.newBlueprintSensor(ctx, "bench ingest without rollups")
	if err != nil {
		return err
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	const batches, size = 200, 1000
	var took [2][]time.Duration
	start := rollupYear.AddDate(1, 0, 0)
	for i := range batches {
		for k, b := range []blueprintSensor{with, without} {
			readings := make([]store.Reading, size)
			for j := range readings {
				v := make([]float64, inputsPerReading)
				for x := range v {
					v[x] = float64(i*size + j + x)
				}
				readings[j] = store.Reading{Time: start.Add(time.Duration(i*size+j) * time.Second), InputIDs: b.inputIDs, Values: v}
			}
			t := time.Now()
			err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{}, func(tx pgx.Tx) error {
				_, err := store.WriteReadings(ctx, tx, b.id, readings, k == 0)
				return err
			})
			if err != nil {
				return err
			}
			took[k] = append(took[k], time.Since(t))
		}
	}
	// The median batch, not the total: a burst of the machine's other
	// work lands on one side or the other, and moves the total.
	with50, _ := percentiles(took[0])
	without50, _ := percentiles(took[1])
	withRate, withoutRate := rate(size, with50), rate(size, without50)
	res.add("13c", "Ingest with the rollups' queue: `store.WriteReadings` of 200 batches of 1,000 new 1-second readings, queueing their hours, against the same without (alternating, 1 connection), at the median batch",
		fmt.Sprintf("%s against %s", perSecond(withRate), perSecond(withoutRate)),
		ratio(withRate/withoutRate, "without; target ≥ 0.85"))
	return nil
}

// rollupYearSeconds is row 13b, with -year-seconds: a year of 1-second
// readings (31,536,000) COPYed, its rollups built, then 13a's request.
func (e *env) rollupYearSeconds(ctx context.Context, res *results) error {
	copied := time.Now()
	s, err := e.copyLong(ctx, "bench year of seconds", 31_536_000, time.Second, true)
	if err != nil {
		return err
	}
	copyTook := time.Since(copied)
	before := e.meter.sample()
	built, err := e.waitRollups(ctx, s.id)
	if err != nil {
		return err
	}
	var buildCPU cpuSpent
	buildCPU.add([]cpuSample{before, e.meter.sample()})
	p50, p99, use, cpu, err := e.timeAggregates(ctx, s, yearQuery(s, "UTC", true), 20)
	if err != nil {
		return err
	}
	res.add("13b", fmt.Sprintf("Aggregates from rollups: 365 daily buckets of a year of 1-second readings (31,536,000, COPYed and vacuumed in %s; rollups built by the maintainer in %s%s), otherwise as 13a; `X-Rollups: %s`",
		duration(copyTook), duration(built), buildCPU.perReading(s.n), use), latency(p50, p99)+cpu.perRequest(20), target(p50, 50*time.Millisecond))
	return nil
}

// recordInputs records b's inputs as ingest records them
// (store.Tx.RecordInputs) and a COPY alone does not: the state an import
// leaves. Without it every row of b's pages carries its input ids, which
// no sensor the service wrote to does.
func (e *env) recordInputs(ctx context.Context, b blueprintSensor) error {
	_, err := e.pool.Exec(ctx, `INSERT INTO sensor_inputs (sensor_id, input_ids) VALUES ($1, $2)
ON CONFLICT (sensor_id) DO UPDATE SET input_ids = EXCLUDED.input_ids`, b.id, b.inputIDs)
	if err != nil {
		return fmt.Errorf("record the inputs of sensor %d: %w", b.id, err)
	}
	return nil
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// benchOutputs are the five outputs of rows 6b and 9: a vibrating-wire
// piezometer over inputs x1…x10, the shape the formula target is stated
// for.
var benchOutputs = []formulas.Output{
	{Key: "digits", Formula: "x1^2 / 1000"},
	{Key: "pressure", Formula: "G * (R0 - digits)"},
	{Key: "corrected", Formula: "pressure + K * (x2 - 20)"},
	{Key: "head", Formula: "pressure / 9.80665"},
	{Key: "alarm", Formula: "abs(pressure) > 150 ? 1 : 0"},
}

var benchConstants = map[string]float64{"G": 0.1, "R0": 9000, "K": 0.05}

// blueprintSensor is a sensor with an instance of the benchmark's
// blueprint, holding the first data sensor's readings under its own ids.
type blueprintSensor struct {
	index     int     // in the service's paths
	id        int64   // the sensor's id
	inputIDs  []int64 // the instance's, for x1…x10
	blueprint int64   // the blueprint's id
}

func benchSpec() formulas.Spec {
	spec := formulas.Spec{Constants: []string{"G", "R0", "K"}, Outputs: benchOutputs}
	for k := range inputsPerReading {
		spec.Inputs = append(spec.Inputs, fmt.Sprintf("x%d", k+1))
	}
	return spec
}

// blueprintSensor creates the blueprint and its sensor through the API,
// then COPYs the readings straight in: their ingest was measured already.
func (e *env) blueprintSensor(ctx context.Context, _ *results) error {
	bpID, err := e.createBlueprint(ctx, "bench piezometer")
	if err != nil {
		return err
	}
	if e.blueprint, err = e.copySensor(ctx, "bench piezometer", bpID, 0, 1); err != nil {
		return err
	}
	_, err = e.pool.Exec(ctx, "VACUUM ANALYZE readings")
	return err
}

// createBlueprint creates the benchmark's blueprint (benchSpec) through the
// API and returns its id.
func (e *env) createBlueprint(ctx context.Context, name string) (int64, error) {
	s, spec := e.svc, benchSpec()
	write := client.BlueprintWrite{Name: name}
	for _, key := range spec.Inputs {
		write.Inputs = append(write.Inputs, client.BlueprintInput{Key: key, Name: key})
	}
	constants := []client.BlueprintConstant{}
	for _, key := range spec.Constants {
		v := benchConstants[key]
		constants = append(constants, client.BlueprintConstant{Key: key, Name: key, Default: &v})
	}
	write.Constants = &constants
	for _, o := range spec.Outputs {
		write.Outputs = append(write.Outputs, client.BlueprintOutput{Key: o.Key, Name: o.Key, Formula: o.Formula})
	}
	bp, err := s.api.CreateBlueprintWithResponse(ctx, s.org, write)
	if err != nil {
		return 0, fmt.Errorf("create blueprint: %w", err)
	}
	if bp.JSON201 == nil {
		return 0, fmt.Errorf("create blueprint: %s", bp.Body)
	}
	return bp.JSON201.Id, nil
}

// newBlueprintSensor creates a blueprint of the bench's inputs, constants
// and outputs, and a sensor of it named name in the service's project.
func (e *env) newBlueprintSensor(ctx context.Context, name string) (blueprintSensor, error) {
	bpID, err := e.createBlueprint(ctx, name)
	if err != nil {
		return blueprintSensor{}, err
	}
	return e.addBlueprintSensor(ctx, e.svc.project, bpID, name)
}

// addBlueprintSensor creates a sensor of the blueprint in the project
// through the API, and adds its readings URL to the service's paths.
func (e *env) addBlueprintSensor(ctx context.Context, project, blueprintID int64, name string) (blueprintSensor, error) {
	s := e.svc
	sensor, err := s.api.CreateSensorWithResponse(ctx, s.org, project, client.SensorCreate{Name: name, BlueprintId: &blueprintID})
	if err != nil {
		return blueprintSensor{}, fmt.Errorf("create sensor: %w", err)
	}
	if sensor.JSON201 == nil {
		return blueprintSensor{}, fmt.Errorf("create sensor: %s", sensor.Body)
	}
	b := blueprintSensor{index: len(s.paths), id: sensor.JSON201.Id, blueprint: blueprintID}
	for _, in := range sensor.JSON201.Inputs {
		b.inputIDs = append(b.inputIDs, in.Id)
	}
	s.addPath(project, b.id)
	return b, nil
}

// copySensor creates a sensor of the blueprint in the service's project,
// then COPYs every every-th reading of the data set's sensor dataSensor
// straight in, under the new sensor's input ids: their ingest was measured
// already.
func (e *env) copySensor(ctx context.Context, name string, blueprint int64, dataSensor, every int) (blueprintSensor, error) {
	b, err := e.addBlueprintSensor(ctx, e.svc.project, blueprint, name)
	if err != nil {
		return b, err
	}
	d := e.data
	src := &funcSource{n: d.perSensor / every, row: func(i int) []any {
		r := d.reading(dataSensor, i*every)
		return []any{b.id, r.Time, b.inputIDs, r.Values}
	}}
	if _, err := e.pool.CopyFrom(ctx, pgx.Identifier{"readings"}, readingColumns, src); err != nil {
		return b, fmt.Errorf("copy the readings of %s: %w", name, err)
	}
	return b, e.recordInputs(ctx, b)
}

// serviceReadOutputs is row 6b: row 6 with outputs=true, on the
// blueprint's sensor.
func (e *env) serviceReadOutputs(ctx context.Context, res *results) error {
	rng := rand.New(rand.NewPCG(e.cfg.seed, 3))
	picks := make([]readPick, e.cfg.queries)
	for i := range picks {
		picks[i] = readPick{sensor: e.blueprint.index, from: e.data.at(rng.IntN(e.data.perSensor - pageSize + 1))}
	}
	return e.timeServiceRead(ctx, res, "6b",
		"Service read with `outputs=true` on a sensor with a 5-output blueprint (otherwise as row 6)", true, picks)
}

// formulasRate is row 9: the blueprint's five outputs evaluated over the
// data set in this process, on one goroutine.
func (e *env) formulasRate(_ context.Context, res *results) error {
	program, err := formulas.Compile(benchSpec())
	if err != nil {
		return err
	}
	eval := program.NewEvaluator()
	d := e.data
	var sink float64
	start := time.Now()
	for s := range d.sensors {
		for i := range d.perSensor {
			r := d.reading(s, i)
			eval.Reset()
			for k, v := range r.Values {
				eval.SetInput(k, v)
			}
			eval.SetConstant(0, benchConstants["G"])
			eval.SetConstant(1, benchConstants["R0"])
			eval.SetConstant(2, benchConstants["K"])
			eval.Run()
			for k := range program.Outputs() {
				v, _ := eval.Output(k)
				sink += v
			}
		}
	}
	elapsed := time.Since(start)
	outputs := d.len() * len(benchOutputs)
	perSec := float64(outputs) / elapsed.Seconds()
	e.log.Info("formulas", "outputs/s", int(perSec), "sink", sink)
	res.add("9", fmt.Sprintf("Formulas: the 5 outputs over the %s readings of the data set, one goroutine, in the bench process", count(d.len())),
		fmt.Sprintf("%s outputs/s (%s per output)", count(int(perSec)), duration(elapsed/time.Duration(outputs))), "target ≥ 10,000,000/s")
	return nil
}

// growForLatest adds readings, later than all others, until each data
// sensor holds latestPerSensor of them: latest values must cost one index
// probe a sensor however long the table.
func (e *env) growForLatest(ctx context.Context, _ *results) error {
	d := e.data
	base := d.start.AddDate(10, 0, 0)
	for s, id := range d.sensors {
		var have int
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM readings WHERE sensor_id = $1", id).Scan(&have); err != nil {
			return err
		}
		src := &funcSource{n: e.cfg.latestPerSensor - have, row: func(i int) []any {
			r := d.reading(s, i)
			return []any{id, base.Add(time.Duration(i) * time.Second), r.InputIDs, r.Values}
		}}
		if _, err := e.pool.CopyFrom(ctx, pgx.Identifier{"readings"}, readingColumns, src); err != nil {
			return fmt.Errorf("grow the table: %w", err)
		}
	}
	if err := e.refreshLatest(ctx); err != nil {
		return err
	}
	_, err := e.pool.Exec(ctx, "VACUUM ANALYZE readings")
	return err
}

// latestValues is rows 10 and 10b: the project's latest values through
// the store and through the service, in turns, and the plan that shows
// one backward index probe per sensor. The service is read by the bench's
// bare client, whose turns are judged; the same turns with Go's
// http.Client are run first and reported beside them.
func (e *env) latestValues(ctx context.Context, res *results) error {
	s := e.svc
	var total int64
	if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM readings").Scan(&total); err != nil {
		return err
	}
	raw := func(ctx context.Context, db *store.DB, _ int) error {
		latest, _, err := db.LatestReadings(ctx, s.org, s.project, 0, 1000, false)
		if err != nil {
			return err
		}
		if len(latest) != len(s.paths) {
			return fmt.Errorf("latest: %d sensors, want %d", len(latest), len(s.paths))
		}
		return nil
	}
	var page bytes.Buffer
	path := fmt.Sprintf("/api/v1/org/%d/proj/%d/latest?limit=1000", s.org, s.project)
	served := func(ctx context.Context, _ int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
		if err != nil {
			return err
		}
		return s.do(req, &page)
	}
	bare, err := s.dialBare()
	if err != nil {
		return err
	}
	defer bare.Close()
	servedBare := func(context.Context, int) error { return bare.get(path) }
	// Warm-ups, untimed: each side's first calls plan their statements.
	warm := store.New(e.pool)
	for range 10 {
		if err := raw(ctx, warm, 0); err != nil {
			return err
		}
		if err := served(ctx, 0); err != nil {
			return err
		}
		if err := servedBare(ctx, 0); err != nil {
			return err
		}
	}
	// As many as the page reads: fewer leave the CPU per request to a
	// handful of clock ticks.
	runs := e.cfg.queries
	withGo, err := e.inTurns(ctx, "latest-10b-http", runs, raw, served)
	if err != nil {
		return err
	}
	t, err := e.inTurns(ctx, "latest-10b", runs, raw, servedBare)
	if err != nil {
		return err
	}
	plan, err := e.latestPlan(ctx)
	if err != nil {
		return err
	}
	rawP50, rawP99 := percentiles(t.raw)
	p50, p99 := percentiles(t.served)
	e.log.Info("latest", "readings", total, "raw_p50", rawP50, "service_p50", p50, "plan", plan)
	res.add("10", fmt.Sprintf("Latest values, raw: `store.LatestReadings` of the project's %d sensors over %s readings, 1 connection, in turns with (10b); plan: %s",
		len(s.paths), count(int(total)), plan), latency(rawP50, rawP99)+t.rawCPU.postgresPerRequest(runs), "1 (the limit)")
	res.add("10b", "Latest values through the service: `GET …/proj/{id}/latest?limit=1000`, 1 client, read by the bench's bare client, in turns with (10)"+withGoClient(withGo),
		latency(p50, p99)+t.servedCPU.microsPerRequest(runs), ratio(float64(p50)/float64(rawP50), "(10), p50; target ≤ 1.5"))
	return nil
}

// latestPlan is the sensor_latest node of the latest-values plan: one row
// a sensor, whatever the readings.
func (e *env) latestPlan(ctx context.Context) (string, error) {
	rows, err := e.pool.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)
SELECT s.id, r.datetime FROM sensors s LEFT JOIN sensor_latest r ON r.sensor_id = s.id
WHERE s.project_id = $1`, e.svc.project)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	for _, line := range lines {
		if strings.Contains(line, "on sensor_latest") {
			return "`" + strings.TrimLeft(strings.TrimSpace(line), "-> ") + "`", nil
		}
	}
	return "", fmt.Errorf("no scan of sensor_latest in the plan:\n%s", strings.Join(lines, "\n"))
}

// funcSource feeds COPY n rows made by row.
type funcSource struct {
	n, next int
	row     func(i int) []any
	values  []any
}

func (f *funcSource) Next() bool {
	f.next++
	return f.next <= f.n
}

func (f *funcSource) Values() ([]any, error) {
	f.values = f.row(f.next - 1)
	return f.values, nil
}

func (f *funcSource) Err() error { return nil }

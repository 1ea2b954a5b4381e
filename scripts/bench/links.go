package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sensorreadings/readings/gen"
)

// linkedSensors prepares row 12: a copy of row 6b's sensor whose input x2
// is linked to the output digits of a third sensor of the blueprint, which
// holds another data sensor's readings: a source that reads every second,
// as the page does.
func (e *env) linkedSensors(ctx context.Context, _ *results) error {
	source, err := e.copySensor(ctx, "bench barometer", e.blueprint.blueprint, 1)
	if err != nil {
		return err
	}
	if e.linked, err = e.copySensor(ctx, "bench linked piezometer", e.blueprint.blueprint, 0); err != nil {
		return err
	}
	s, staleness := e.svc, 3600
	res, err := s.api.UpdateLinksWithResponse(ctx, s.org, s.project, e.linked.id, gen.LinksUpdate{
		"x2": {SensorId: source.id, Key: "digits", Staleness: &staleness},
	})
	if err != nil || res.JSON200 == nil {
		return fmt.Errorf("link x2: %v %s", err, res.Body)
	}
	_, err = e.pool.Exec(ctx, "VACUUM ANALYZE readings")
	return err
}

// linkedRead is row 12: the pages of row 6b with outputs, on row 6b's
// sensor and on its linked copy in turns, so that both meet the same load.
func (e *env) linkedRead(ctx context.Context, res *results) error {
	rng := rand.New(rand.NewPCG(e.cfg.seed, 3))
	picks := make([]time.Time, e.cfg.queries)
	for i := range picks {
		picks[i] = e.data.at(rng.IntN(e.data.perSensor - pageSize + 1))
	}
	sensors := []int{e.blueprint.index, e.linked.index}
	var page bytes.Buffer
	for _, from := range picks[:min(warmUps, len(picks))] {
		for _, sensor := range sensors {
			if err := e.svc.getReadings(ctx, sensor, from, true, &page); err != nil {
				return err
			}
			var readings []struct {
				Outputs map[string]float64 `json:"outputs"`
			}
			if err := json.Unmarshal(page.Bytes(), &readings); err != nil {
				return fmt.Errorf("GET readings: %w", err)
			}
			// Every reading of the linked page has a source reading a
			// second or less before it, except a page's very first.
			if len(readings) != pageSize || len(readings[pageSize-1].Outputs) != len(benchOutputs) {
				return fmt.Errorf("GET readings: %d readings, the last with %d outputs; want %d with %d", len(readings), len(readings[pageSize-1].Outputs), pageSize, len(benchOutputs))
			}
		}
	}
	times := [2][]time.Duration{}
	stop := e.clock()
	for _, from := range picks {
		for k, sensor := range sensors {
			start := time.Now()
			if err := e.svc.getReadings(ctx, sensor, from, true, &page); err != nil {
				return err
			}
			times[k] = append(times[k], time.Since(start))
		}
	}
	stop()
	plainP50, plainP99 := percentiles(times[0])
	linkedP50, linkedP99 := percentiles(times[1])
	e.log.Info("linked read", "p50", linkedP50, "unlinked_p50", plainP50)
	res.add("12", fmt.Sprintf("Service read with `outputs=true` on row 6b's sensor with x2 linked to another sensor's output (both 1 reading a second), "+
		"against the same page unlinked, in turns, %s requests each, 1 client", count(len(picks))),
		fmt.Sprintf("linked %s; unlinked p50 %s, p99 %s", latency(linkedP50, linkedP99), duration(plainP50), duration(plainP99)),
		ratio(float64(linkedP50)/float64(plainP50), "unlinked, p50; target ≤ 1.3"))
	return nil
}

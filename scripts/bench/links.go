package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/scripts/proccpu"
)

// linkedSensors prepares row 12: two copies of row 6b's sensor whose input
// x2 is linked to the output digits of another sensor of the blueprint,
// which holds another data sensor's readings: a barometer that reads once
// a minute (e.linked), and, to show the cost of a source as dense as the
// page, one that reads every second (e.linkedDense).
func (e *env) linkedSensors(ctx context.Context, _ *results) error {
	for _, l := range []struct {
		every     int
		dependant *blueprintSensor
	}{{60, &e.linked}, {1, &e.linkedDense}} {
		source, err := e.copySensor(ctx, fmt.Sprintf("bench barometer, 1 reading every %d s", l.every), e.blueprint.blueprint, 1, l.every)
		if err != nil {
			return err
		}
		if *l.dependant, err = e.copySensor(ctx, fmt.Sprintf("bench piezometer linked to it (%d s)", l.every), e.blueprint.blueprint, 0, 1); err != nil {
			return err
		}
		s, staleness := e.svc, 3600
		res, err := s.api.UpdateLinksWithResponse(ctx, s.org, s.project, l.dependant.id, client.LinksUpdate{
			"x2": {SensorId: source.id, Key: "digits", Staleness: &staleness},
		})
		if err != nil {
			return fmt.Errorf("link x2: %w", err)
		}
		if res.JSON200 == nil {
			return fmt.Errorf("link x2: %s", res.Body)
		}
	}
	_, err := e.pool.Exec(ctx, "VACUUM ANALYZE readings")
	return err
}

// linkedRead is row 12: the pages of row 6b with outputs, on row 6b's
// sensor and on its linked copies in turns, so that all meet the same load.
func (e *env) linkedRead(ctx context.Context, res *results) error {
	rng := rand.New(rand.NewPCG(e.cfg.seed, 3))
	picks := make([]time.Time, e.cfg.queries)
	for i := range picks {
		picks[i] = e.data.at(rng.IntN(e.data.perSensor - pageSize + 1))
	}
	sensors := []int{e.blueprint.index, e.linked.index, e.linkedDense.index}
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
			// Each source reads at least once a minute, well within the
			// link's hour: every reading has every output.
			if len(readings) != pageSize || len(readings[0].Outputs) != len(benchOutputs) {
				return fmt.Errorf("GET readings: %d readings, the first with %d outputs; want %d with %d", len(readings), len(readings[0].Outputs), pageSize, len(benchOutputs))
			}
		}
	}
	times := make([][]time.Duration, len(sensors))
	profiled := e.profile(ctx, "read-12", readProfileTime)
	stop, before := e.clock(), e.meter.sample()
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
	var cpu cpuSpent
	cpu.add([]cpuSample{before, e.meter.sample()})
	if err := profiled(); err != nil {
		return err
	}
	// The CPU of each kind of page, which the rounds mix: each sensor's
	// pages again, one sensor after the other.
	var kinds [3]cpuSpent
	for k, sensor := range sensors {
		before := e.meter.sample()
		for _, from := range picks {
			if err := e.svc.getReadings(ctx, sensor, from, true, &page); err != nil {
				return err
			}
		}
		kinds[k].add([]cpuSample{before, e.meter.sample()})
	}
	var p50, p99 [3]time.Duration
	for k := range sensors {
		p50[k], p99[k] = percentiles(times[k])
	}
	e.log.Info("linked read", "unlinked_p50", p50[0], "linked_p50", p50[1], "dense_p50", p50[2])
	res.add("12", fmt.Sprintf("Service read with `outputs=true` on row 6b's sensor with x2 linked to the output of a barometer reading once a minute, "+
		"against the same page unlinked, in turns, %s requests each, 1 client; the same linked to a source reading every second, as dense as the page; "+
		"then each sensor's pages again, one sensor after the other, for the CPU of each", count(len(picks))),
		fmt.Sprintf("linked %s; unlinked %s; dense source %s%s%s", latency(p50[1], p99[1]), latency(p50[0], p99[0]), latency(p50[2], p99[2]),
			strings.Replace(cpu.microsPerRequest(len(picks)), "per request", "per round of the three", 1), pageCPU(kinds, len(picks))),
		ratio(float64(p50[1])/float64(p50[0]), "unlinked, p50; target ≤ 1.3")+"; "+ratio(float64(p50[2])/float64(p50[0]), "with the dense source"))
	return nil
}

// pageCPU is the CPU per page of row 12's unlinked, linked and dense
// pages, n of each, as a figure's suffix.
func pageCPU(kinds [3]cpuSpent, n int) string {
	if !kinds[0].known || !kinds[1].known || !kinds[2].known {
		return ""
	}
	us := func(c cpuSpent) string {
		return fmt.Sprintf("%.0f + %.0f µs", float64(c.service)/proccpu.ClockTicks/float64(n)*1e6, float64(c.postgres)/proccpu.ClockTicks/float64(n)*1e6)
	}
	return fmt.Sprintf("; CPU per page, service + PostgreSQL: unlinked %s, linked %s, dense source %s", us(kinds[0]), us(kinds[1]), us(kinds[2]))
}

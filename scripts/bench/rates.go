package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sensorreadings/readings/gen/client"
)

// rateRule is row 11e's rule on each sensor: digits rising faster than
// 5,000 a day over the last hour, which the bench data (uniform noise, see
// alarmRules) crosses now and then, so that its events are written too.
var rateRule = client.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: 5000, Window: ptr(3600), Per: ptr(86400)}

// rateIngest is row 11e: the data set POSTed as in row 3 to sensors of the
// bench blueprint without rules, then to others with one rate rule each
// (issue 29: at most 10 % slower), taking turns, on an emptied table each
// time.
func (e *env) rateIngest(ctx context.Context, res *results) error {
	bp, err := e.createBlueprint(ctx, "bench rate rules")
	if err != nil {
		return err
	}
	var (
		took   [2]time.Duration
		cpu    [2]cpuSpent
		events int
	)
	for round := range alarmRounds {
		for v, name := range []string{"plain", "rate"} {
			sensors := make([]blueprintSensor, len(e.data.sensors))
			for i := range sensors {
				if sensors[i], err = e.addBlueprintSensor(ctx, e.svc.project, bp, fmt.Sprintf("%s rate %d.%d", name, round, i)); err != nil {
					return err
				}
				if v == 1 {
					r, err := e.svc.api.CreateAlarmRuleWithResponse(ctx, e.svc.org, e.svc.project, sensors[i].id, rateRule)
					if err != nil {
						return fmt.Errorf("create rate rule: %w", err)
					}
					if r.JSON201 == nil {
						return fmt.Errorf("create rate rule: %s", r.Body)
					}
				}
			}
			spans, bodies := e.sensorBodies(sensors)
			if _, err := e.pool.Exec(ctx, "TRUNCATE readings, sensor_latest"); err != nil {
				return err
			}
			before, err := e.triggerEvents(ctx)
			if err != nil {
				return err
			}
			e.checkpoint(ctx)
			profiled := e.profile(ctx, fmt.Sprintf("rates-%s-%d", name, round), ingestProfileTime)
			elapsed, err := e.post(ctx, spans, bodies)
			if err != nil {
				return err
			}
			if err := profiled(); err != nil {
				return err
			}
			if err := e.expectReadings(ctx, e.data.len()); err != nil {
				return err
			}
			after, err := e.triggerEvents(ctx)
			if err != nil {
				return err
			}
			took[v] += elapsed
			cpu[v].add(e.timed[len(e.timed)-2:])
			if v == 1 {
				events += after - before
			}
			e.log.Info("rate rule ingest", "round", round, "sensors", name, "readings/s", int(rate(e.data.len(), elapsed)))
		}
	}
	n := alarmRounds * e.data.len()
	plain, rated := rate(n, took[0]), rate(n, took[1])
	verdict := "met"
	if rated/plain < 1/1.1 {
		verdict = "not met"
	}
	res.add("11e", fmt.Sprintf("Service ingest, new readings, one rate rule (digits over the last hour, %s events raised) on each of %d sensors, POSTs as in (3); "+
		"%d rounds taking turns with sensors without rules, each on an emptied table", count(events), len(e.data.sensors), alarmRounds),
		perSecond(rated)+cpu[1].perReading(n),
		fmt.Sprintf("%.2f × without rules (%s); target ≥ 0.91, at most 10 %% slower (issue 29): %s", rated/plain, perSecond(plain), verdict)+cpu[1].ratio(cpu[0]))
	return nil
}

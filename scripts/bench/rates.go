package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sensorreadings/readings/gen/client"
)

// rateRule is row 11e's rule on each sensor: digits rising faster than
// 21,000 a day over the last hour. On the bench data (digits = x1²/1000,
// x1 uniform noise, a reading a second) that rate is (v − v₀) × 24 once
// the window is full, so the rule changes level at about 3 % of those
// readings, as the threshold rules of row 11b do; in each sensor's first
// hour the window is shorter, the rate larger, and it changes more often:
// about 10 % of all readings (the row prints the share measured).
var rateRule = client.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: 21000, Window: ptr(3600), Per: ptr(86400)}

// flappingRateRule is row 11e2's: the same rule at 5,000 a day, which the
// noise crosses back and forth at about 40 % of the readings; no rule
// anyone monitors with (each change is an event's worth), kept as the
// stress of the rule's writes.
var flappingRateRule = client.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: 5000, Window: ptr(3600), Per: ptr(86400)}

// rateIngest is rows 11e and 11e2: the data set POSTed as in row 3 to
// sensors of the bench blueprint without rules, then to others with one
// rate rule each (issue 29: at most 10 % slower), then to others with the
// flapping one, taking turns, on an emptied table each time.
func (e *env) rateIngest(ctx context.Context, res *results) error {
	bp, err := e.createBlueprint(ctx, "bench rate rules")
	if err != nil {
		return err
	}
	variants := []struct {
		name string
		rule *client.AlarmRuleInput
	}{{"plain", nil}, {"rate", &rateRule}, {"flapping", &flappingRateRule}}
	var (
		took   [3]time.Duration
		cpu    [3]cpuSpent
		events [3]ruleEvents
	)
	for round := range alarmRounds {
		for v, variant := range variants {
			name := variant.name
			sensors := make([]blueprintSensor, len(e.data.sensors))
			for i := range sensors {
				if sensors[i], err = e.addBlueprintSensor(ctx, e.svc.project, bp, fmt.Sprintf("%s rate %d.%d", name, round, i)); err != nil {
					return err
				}
				if variant.rule != nil {
					r, err := e.svc.api.CreateAlarmRuleWithResponse(ctx, e.svc.org, e.svc.project, sensors[i].id, *variant.rule)
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
			before, err := e.ruleEvents(ctx)
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
			after, err := e.ruleEvents(ctx)
			if err != nil {
				return err
			}
			took[v] += elapsed
			cpu[v].add(e.timed[len(e.timed)-2:])
			events[v].add(after, before)
			e.log.Info("rate rule ingest", "round", round, "sensors", name, "readings/s", int(rate(e.data.len(), elapsed)))
		}
	}
	n := alarmRounds * e.data.len()
	plain := rate(n, took[0])
	row := func(v int, what string) (string, string) {
		return fmt.Sprintf("Service ingest, new readings, one rate rule (%s; it changed level at %.1f %% of the readings, %s events raised) on each of %d sensors, POSTs as in (3); "+
				"%d rounds taking turns with sensors without rules, each on an emptied table", what, 100*float64(events[v].changes)/float64(n), count(events[v].events), len(e.data.sensors), alarmRounds),
			perSecond(rate(n, took[v])) + cpu[v].perReading(n)
	}
	rated := rate(n, took[1])
	verdict := "met"
	if rated/plain < 1/1.1 {
		verdict = "not met"
	}
	what, figure := row(1, "digits rising faster than 21,000 a day over the last hour")
	res.add("11e", what, figure,
		fmt.Sprintf("%.2f × without rules (%s); target ≥ 0.91, at most 10 %% slower (issue 29): %s", rated/plain, perSecond(plain), verdict)+cpu[1].ratio(cpu[0]))
	what, figure = row(2, "the stress of a flapping rule: 5,000 a day")
	res.add("11e2", what, figure, fmt.Sprintf("%.2f × without rules; no target", rate(n, took[2])/plain)+cpu[2].ratio(cpu[0]))
	return nil
}

// ruleEvents counts the events of rules (overdue ones left out) and the
// changes of level they stand for: each is one, and counts those it
// coalesced (late exceedances left out, which change no level).
type ruleEvents struct{ events, changes int }

// add adds the events between two counts.
func (r *ruleEvents) add(after, before ruleEvents) {
	r.events += after.events - before.events
	r.changes += after.changes - before.changes
}

func (e *env) ruleEvents(ctx context.Context) (ruleEvents, error) {
	var r ruleEvents
	err := e.pool.QueryRow(ctx, `
SELECT count(*), coalesce(sum(1 + coalesced) FILTER (WHERE kind <> 'late'), 0)
FROM alarm_events WHERE target_key <> 'overdue'`).Scan(&r.events, &r.changes)
	if err != nil {
		return r, fmt.Errorf("count alarm events: %w", err)
	}
	return r, nil
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/scripts/proccpu"
)

// alarmRounds is how many times rows 11a and 11b each ingest the data set,
// taking turns, so that a change in the machine's load falls on both.
const alarmRounds = 2

// alarmRules are the five rules of row 11b on each sensor, on the bench
// blueprint's outputs (benchOutputs); x1 and x2 are uniform in [0, 1000),
// so each holds for about a reading in a hundred or fewer, and the
// targets move between levels now and then, as a monitored structure's do.
var alarmRules = []client.AlarmRuleInput{
	{Target: "digits", Level: "Alert", Direction: "above", Threshold: 990, Deadband: ptr(5.0)},
	{Target: "digits", Level: "Alarm", Direction: "above", Threshold: 999},
	{Target: "pressure", Level: "Action", Direction: "below", Threshold: 801},
	{Target: "corrected", Level: "Alert", Direction: "above", Threshold: 945},
	{Target: "head", Level: "Action", Direction: "below", Threshold: 81.65, Persistence: ptr(3)},
}

// quietRules are alarmRules at thresholds the data crosses about once in
// 20,000 readings per rule, as a monitored structure's outputs do: row 11d
// measures what evaluating every reading costs when few events are
// written, row 11b when many are.
var quietRules = []client.AlarmRuleInput{
	{Target: "digits", Level: "Alert", Direction: "above", Threshold: 999.9, Deadband: ptr(5.0)},
	{Target: "digits", Level: "Alarm", Direction: "above", Threshold: 999.95},
	{Target: "pressure", Level: "Action", Direction: "below", Threshold: 800.01},
	{Target: "corrected", Level: "Alert", Direction: "above", Threshold: 948.9},
	{Target: "head", Level: "Action", Direction: "below", Threshold: 81.5783, Persistence: ptr(3)},
}

func ptr[T any](v T) *T { return &v }

// alarmIngest is rows 11a, 11b and 11d: the data set POSTed as in row 3,
// to sensors of the bench blueprint without rules, then to others with
// alarmRules and an overdue rule each, then to others with quietRules, on
// an emptied table each time.
func (e *env) alarmIngest(ctx context.Context, res *results) error {
	bp, err := e.createBlueprint(ctx, "bench alarms")
	if err != nil {
		return err
	}
	variants := []struct {
		name  string
		rules []client.AlarmRuleInput
	}{{"plain", nil}, {"ruled", alarmRules}, {"quiet", quietRules}}
	var (
		took   [3]time.Duration // per variant
		cpu    [3]cpuSpent
		events [3]int
	)
	for round := range alarmRounds {
		for v, variant := range variants {
			name := variant.name
			sensors := make([]blueprintSensor, len(e.data.sensors))
			for i := range sensors {
				if sensors[i], err = e.addBlueprintSensor(ctx, e.svc.project, bp, fmt.Sprintf("%s %d.%d", name, round, i)); err != nil {
					return err
				}
				if variant.rules != nil {
					if err := e.addAlarmRules(ctx, e.svc.project, sensors[i].id, variant.rules); err != nil {
						return err
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
			profiled := e.profile(ctx, fmt.Sprintf("alarms-%s-%d", name, round), ingestProfileTime)
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
			events[v] += after - before
			e.log.Info("alarm ingest", "round", round, "sensors", name, "readings/s", int(rate(e.data.len(), elapsed)))
		}
	}
	n := alarmRounds * e.data.len()
	plain, ruled, quiet := rate(n, took[0]), rate(n, took[1]), rate(n, took[2])
	what := fmt.Sprintf("%d sensors of a 5-output blueprint, POSTs as in (3); %d rounds taking turns with (11%%s), each on an emptied table",
		len(e.data.sensors), alarmRounds)
	res.add("11a", "Service ingest, new readings, no alarm rules: "+fmt.Sprintf(what, "b"), perSecond(plain)+cpu[0].perReading(n), "")
	verdict := func(r float64) string {
		if r < 0.9 {
			return "not met"
		}
		return "met"
	}
	res.add("11b", fmt.Sprintf("Service ingest, new readings, 5 rules on each sensor's outputs and an overdue rule (%s events raised): ",
		count(events[1]))+fmt.Sprintf(what, "a"), perSecond(ruled)+cpu[1].perReading(n),
		fmt.Sprintf("%.2f × (11a); target ≥ 0.90 (issue 16): %s", ruled/plain, verdict(ruled/plain))+cpu[1].ratio(cpu[0]))
	res.add("11d", fmt.Sprintf("Service ingest as (11b), the rules at thresholds crossed about once in 20,000 readings (%s events raised)",
		count(events[2])), perSecond(quiet)+cpu[2].perReading(n),
		fmt.Sprintf("%.2f × (11a); target ≥ 0.90 (issue 16): %s", quiet/plain, verdict(quiet/plain))+cpu[2].ratio(cpu[0]))
	return nil
}

// triggerEvents counts the events of rules so far (overdue ones left out).
func (e *env) triggerEvents(ctx context.Context) (int, error) {
	var n int
	err := e.pool.QueryRow(ctx, "SELECT count(*) FROM alarm_events WHERE target_key <> 'overdue'").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count alarm events: %w", err)
	}
	return n, nil
}

// cpuSpent is the CPU the service and PostgreSQL spent over timed parts of
// a phase: unlike a rate, it hardly moves with what other processes take
// of the machine (though PostgreSQL's counts the other sessions of a
// shared cluster too).
type cpuSpent struct {
	service, postgres int64 // ticks
	known             bool
}

// add adds the (start, end) samples of a timed part.
func (c *cpuSpent) add(samples []cpuSample) {
	from, to := samples[0], samples[1]
	c.known = from.valid && to.valid
	c.service += to.service - from.service
	c.postgres += to.postgres - from.postgres
}

// perReading is the CPU per reading of n, as a figure's suffix.
func (c cpuSpent) perReading(n int) string {
	if !c.known {
		return ""
	}
	us := func(ticks int64) string {
		return fmt.Sprintf("%.1f µs", float64(ticks)/proccpu.ClockTicks/float64(n)*1e6)
	}
	return fmt.Sprintf("; CPU per reading: service %s + PostgreSQL %s = %s", us(c.service), us(c.postgres), us(c.service+c.postgres))
}

// postgresPerReading is PostgreSQL's CPU per reading of n, as a figure's
// suffix, for a row where the bench, not the service, is its client.
func (c cpuSpent) postgresPerReading(n int) string {
	if !c.known {
		return ""
	}
	return fmt.Sprintf("; PostgreSQL's CPU per reading %.1f µs", float64(c.postgres)/proccpu.ClockTicks/float64(n)*1e6)
}

// postgresRatio compares PostgreSQL's CPU per reading with base's, as a
// ratio's suffix; both must count the same readings.
func (c cpuSpent) postgresRatio(base cpuSpent, what string) string {
	if !c.known || !base.known || base.postgres == 0 {
		return ""
	}
	return fmt.Sprintf("; PostgreSQL's CPU per reading %.2f × %s", float64(c.postgres)/float64(base.postgres), what)
}

// ratio compares the CPU per reading with base's, as a ratio's suffix.
func (c cpuSpent) ratio(base cpuSpent) string {
	if !c.known || !base.known || base.service == 0 || base.postgres == 0 {
		return ""
	}
	return fmt.Sprintf("; CPU per reading: service %.2f ×, PostgreSQL %.2f ×",
		float64(c.service)/float64(base.service), float64(c.postgres)/float64(base.postgres))
}

// addAlarmRules gives the sensor alarmRules and an overdue rule at
// Maintenance.
func (e *env) addAlarmRules(ctx context.Context, project, sensor int64, rules []client.AlarmRuleInput) error {
	s := e.svc
	for _, r := range rules {
		res, err := s.api.CreateAlarmRuleWithResponse(ctx, s.org, project, sensor, r)
		if err != nil {
			return fmt.Errorf("create alarm rule: %w", err)
		}
		if res.JSON201 == nil {
			return fmt.Errorf("create alarm rule: %s", res.Body)
		}
	}
	res, err := s.api.SetOverdueRuleWithResponse(ctx, s.org, project, sensor, client.OverdueRuleInput{Level: "Maintenance", AfterSeconds: 3600})
	if err != nil {
		return fmt.Errorf("set overdue rule: %w", err)
	}
	if res.StatusCode() != http.StatusOK {
		return fmt.Errorf("set overdue rule: %s", res.Body)
	}
	return nil
}

// sensorBodies encodes the data set's POSTs, in row 3's order, for the
// blueprint sensors standing in for its sensors.
func (e *env) sensorBodies(sensors []blueprintSensor) ([]span, [][]byte) {
	spans := e.data.roundRobin(e.cfg.postBatch)
	bodies := make([][]byte, len(spans))
	for i, sp := range spans {
		bodies[i] = e.data.appendJSON(nil, sp, sensors[sp.sensor].inputIDs)
		spans[i].sensor = sensors[sp.sensor].index
	}
	return spans, bodies
}

// webhookLatency is row 11c: the time from a POST whose reading triggers
// an alarm to its event's arrival at a webhook receiver on loopback, in a
// project of its own. Each trigger is followed by a reading that clears
// it, not waited for.
func (e *env) webhookLatency(ctx context.Context, res *results) error {
	triggers := 200
	if e.cfg.readings < 1_000_000 {
		triggers = 50
	}
	s := e.svc
	arrived := make(chan string, 2*triggers)
	receiver := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var event struct{ Kind, Target string }
		err := json.NewDecoder(r.Body).Decode(&event)
		w.WriteHeader(http.StatusNoContent)
		if err == nil {
			arrived <- event.Target + " " + event.Kind
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go receiver.Serve(ln)
	defer receiver.Close()

	p, err := s.api.CreateProjectWithResponse(ctx, s.org, client.ProjectCreate{Name: "bench webhooks"})
	if err != nil {
		return fmt.Errorf("create project: %w", err)
	}
	if p.JSON201 == nil {
		return fmt.Errorf("create project: %s", p.Body)
	}
	project := p.JSON201.Id
	bp, err := e.createBlueprint(ctx, "bench webhooks")
	if err != nil {
		return err
	}
	sensor, err := e.addBlueprintSensor(ctx, project, bp, "bench webhooks")
	if err != nil {
		return err
	}
	rule := client.AlarmRuleInput{Target: "digits", Level: "Alert", Direction: "above", Threshold: 500}
	if r, err := s.api.CreateAlarmRuleWithResponse(ctx, s.org, project, sensor.id, rule); err != nil {
		return fmt.Errorf("create alarm rule: %w", err)
	} else if r.JSON201 == nil {
		return fmt.Errorf("create alarm rule: %s", r.Body)
	}
	hook, err := s.api.CreateWebhookWithResponse(ctx, s.org, project, client.WebhookCreate{Url: "http://" + ln.Addr().String() + "/", Secret: "bench webhook secret"})
	if err != nil {
		return fmt.Errorf("create webhook: %w", err)
	}
	if hook.JSON201 == nil {
		return fmt.Errorf("create webhook: %s", hook.Body)
	}

	// x1 900 makes digits 810, past the rule; x1 100 makes it 10.
	body := func(i int, x1 float64) []byte {
		b := fmt.Appendf(nil, `[{"datetime":"%s","inputs":{`, dataStart.Add(time.Duration(i)*time.Second).Format(time.RFC3339))
		for k, id := range sensor.inputIDs {
			if k > 0 {
				b = append(b, ',')
			}
			v := 500.0
			if k == 0 {
				v = x1
			}
			b = strconv.AppendInt(append(b, '"'), id, 10)
			b = strconv.AppendFloat(append(b, `":`...), v, 'g', -1, 64)
		}
		return append(b, "}}]"...)
	}
	var buf bytes.Buffer
	times := make([]time.Duration, 0, triggers)
	// Triggers come at random instants, as alarms do: the service also
	// looks for due deliveries every second, and a trigger sent just
	// after a look would meet the loop in step with it.
	rng := rand.New(rand.NewPCG(e.cfg.seed, 11))
	stop := e.clock()
	for i := range triggers {
		select {
		case <-time.After(time.Duration(rng.Int64N(int64(time.Second)))):
		case <-ctx.Done():
			return ctx.Err()
		}
		sent := time.Now()
		if err := s.postReadings(ctx, sensor.index, body(2*i, 900), &buf); err != nil {
			return err
		}
		if err := awaitEvent(ctx, arrived, "digits triggered"); err != nil {
			return fmt.Errorf("trigger %d: %w", i, err)
		}
		times = append(times, time.Since(sent))
		if err := s.postReadings(ctx, sensor.index, body(2*i+1, 100), &buf); err != nil {
			return err
		}
	}
	stop()
	p50, p99 := percentiles(times)
	e.log.Info("webhook latency", "p50", p50, "p99", p99)
	res.add("11c", fmt.Sprintf("Alarm to webhook: a triggering POST sent until its event arrives at a receiver on 127.0.0.1, %d triggers, "+
		"each at a random instant and followed by a clearing POST", triggers), latency(p50, p99), "")
	return nil
}

// awaitEvent waits for an event, "target kind", to arrive, passing over
// others.
func awaitEvent(ctx context.Context, arrived <-chan string, event string) error {
	timeout := time.After(30 * time.Second)
	for {
		select {
		case got := <-arrived:
			if got == event {
				return nil
			}
		case <-timeout:
			return errors.New("no webhook delivery within 30 s")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

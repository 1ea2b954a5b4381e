package server_test

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
)

// scrape returns the value of every sample /metrics shows whose name (and
// labels) match name, keyed by the sample's full name with its labels.
func scrape(t *testing.T, e *env, name string) map[string]float64 {
	t.Helper()
	res, err := http.Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	samples := map[string]float64{}
	for _, m := range regexp.MustCompile(`(?m)^(`+name+`(?:\{[^}]*\})?) (\S+)$`).FindAllStringSubmatch(string(body), -1) {
		v, err := strconv.ParseFloat(m[len(m)-1], 64)
		if err != nil {
			t.Fatalf("/metrics: %s has value %q", m[1], m[len(m)-1])
		}
		samples[m[1]] = v
	}
	return samples
}

// What an operator watches of the background work is read from the
// database at each scrape: a webhook delivery that waits, an hour queued
// for the rollups and an overdue sensor without its alarm show up, and
// go once the workers have done their part.
func TestOpsMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Ops")
	project := `{project_id="` + strconv.FormatInt(a.tn.projectID, 10) + `"}`

	before := scrape(t, e, `readings_(ops_stats_up|rollup_queue_hours|overdue_check_lag_seconds|webhook_pending_deliveries|wal_archived_total)`)
	for name, want := range map[string]float64{
		"readings_ops_stats_up": 1, "readings_rollup_queue_hours": 0, "readings_overdue_check_lag_seconds": 0, "readings_wal_archived_total": before["readings_wal_archived_total"],
	} {
		if got, ok := before[name]; !ok || got != want {
			t.Errorf("before: %s = %v (shown: %v), want %v", name, got, ok, want)
		}
	}
	if _, ok := before["readings_webhook_pending_deliveries"+project]; ok {
		t.Errorf("before: a webhook backlog for project %d, which has no webhook", a.tn.projectID)
	}

	// A webhook nobody delivers to (no worker runs here), an event for it,
	// an hour queued for the rollups (a batch of new readings merges them
	// into its hour's rollup, and so does one that replaces every reading
	// of its hours; one that replaces some of them queues the hour), and
	// an overdue rule that this reading of 2024 breaks.
	a.webhook(t, "https://receiver.example.com/hook")
	a.post(t, 0, 3000) // digits 9000: Alert and Alarm
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, batch := range [][]time.Time{{at, at.Add(time.Second)}, {at}} {
		var readings []client.ReadingInput
		for _, t := range batch {
			readings = append(readings, client.ReadingInput{Datetime: t, Inputs: client.Values{"1": 1}})
		}
		posted, err := a.editor.PostReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.sensorID, nil, readings)
		if err != nil || posted.StatusCode() != http.StatusOK {
			t.Fatalf("post readings: %v %s", err, posted.Body)
		}
	}
	res, err := a.admin.SetOverdueRuleWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID,
		client.OverdueRuleInput{AfterSeconds: 60, Level: "Alarm"})
	if err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("set overdue rule: %v %s", err, res.Body)
	}
	since2024 := time.Since(time.Date(2024, 5, 1, 12, 1, 0, 0, time.UTC)).Seconds()

	during := scrape(t, e, `readings_(rollup_queue_hours|rollup_queue_oldest_seconds|overdue_check_lag_seconds|webhook_pending_deliveries|webhook_oldest_pending_seconds)`)
	if got, want := during["readings_webhook_pending_deliveries"+project], 1.0; got != want {
		t.Errorf("readings_webhook_pending_deliveries%s = %v, want %v (the event of the alarm the reading raised)", project, got, want)
	}
	if got, ok := during["readings_webhook_oldest_pending_seconds"+project]; !ok || got < 0 || got > 60 {
		t.Errorf("readings_webhook_oldest_pending_seconds%s = %v (shown: %v), want 0 to 60", project, got, ok)
	}
	if got, want := during["readings_rollup_queue_hours"], 1.0; got != want {
		t.Errorf("readings_rollup_queue_hours = %v, want %v", got, want)
	}
	if got := during["readings_rollup_queue_oldest_seconds"]; got < 0 || got > 60 {
		t.Errorf("readings_rollup_queue_oldest_seconds = %v, want 0 to 60", got)
	}
	if got := during["readings_overdue_check_lag_seconds"]; got < since2024-60 || got > since2024+60 {
		t.Errorf("readings_overdue_check_lag_seconds = %v, want about %v: due since a minute after the reading of 2024", got, since2024)
	}

	if _, _, err := e.core.CheckOverdueOnce(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.core.RecomputeRollups(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now()`); err != nil {
		t.Fatal(err)
	}
	after := scrape(t, e, `readings_(rollup_queue_hours|rollup_queue_oldest_seconds|overdue_check_lag_seconds|webhook_pending_deliveries)`)
	for name, want := range map[string]float64{
		"readings_rollup_queue_hours": 0, "readings_rollup_queue_oldest_seconds": 0, "readings_overdue_check_lag_seconds": 0,
	} {
		if got := after[name]; got != want {
			t.Errorf("after the workers: %s = %v, want %v", name, got, want)
		}
	}
	if got, ok := after["readings_webhook_pending_deliveries"+project]; ok {
		t.Errorf("after delivery: readings_webhook_pending_deliveries%s = %v, want no series", project, got)
	}
}

package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// TestGrafana requests the URLs docs/grafana.md gives Grafana's Infinity
// data source, with ${__timeFrom} and ${__timeTo} as Infinity substitutes
// them (epoch milliseconds), and checks the shape its columns select.
func TestGrafana(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	sensor, err := e.db.GetSensor(t.Context(), store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	if err != nil {
		t.Fatal(err)
	}
	piezo := tn
	piezo.sensorID = tn.instanceID
	freq := fmt.Sprint(sensor.Instance.Inputs[0].ID)
	post(t, e.client(tn.tokens[store.Editor]), piezo,
		reading(t, "2024-05-01T00:00:00Z", gen.Values{freq: 3000}),
		reading(t, "2024-05-01T00:20:00Z", gen.Values{freq: 2000}))
	grafana := strings.NewReplacer("${__timeFrom}", "1714521600000", "${__timeTo}", "1714608000000") // 2024-05-01, one day

	t.Run("OneOutput", func(t *testing.T) {
		// docs/grafana.md, "A chart of one output"
		url := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/aggregates", tn.orgID, tn.projectID, tn.instanceID) +
			"?keys=names&outputs=true&fn=avg&max_points=1000&datetime__gte=${__timeFrom}&datetime__lt=${__timeTo}"
		res, body := e.do(tn.tokens[store.Viewer], "GET", grafana.Replace(url), "", nil)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
		}
		// A day in at most 1000 buckets: 2m gives 722, 1m would give 1442.
		if got, want := res.Header.Get("X-Readings-Interval"), "2m"; got != want {
			t.Errorf("X-Readings-Interval = %q, want %q", got, want)
		}
		// The columns: datetime, and outputs.pressure.avg.
		var rows []struct {
			Datetime string
			Outputs  map[string]map[string]float64
		}
		if err := json.Unmarshal(body, &rows); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(rows)
		want := "[{2024-05-01T00:00:00.000Z map[digits:map[avg:9000] pressure:map[avg:-900]]} {2024-05-01T00:20:00.000Z map[digits:map[avg:4000] pressure:map[avg:-400]]}]"
		if got != want {
			t.Errorf("rows = %s, want %s", got, want)
		}
	})
}

// TestMaxPoints checks the interval max_points picks, and its refusals.
func TestMaxPoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	path := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d/aggregates?", tn.orgID, tn.projectID, tn.sensorID)
	day := "&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-05-02T00:00:00Z"
	for _, tc := range []struct {
		query        string
		status       int
		wantInterval string
	}{
		{"max_points=100" + day, 200, "15m"}, // 96 + 2 buckets; 10m would be 146
		{"max_points=10000" + day, 200, "1m"},
		{"max_points=3" + day, 200, "1d"},
		{"max_points=2" + day, 200, "2d"},
		{"interval=1h" + day, 200, "1h"},
		{"max_points=2&datetime__gte=2000-01-01T00:00:00Z&datetime__lt=2024-01-01T00:00:00Z", 400, ""},
		{"interval=1h&max_points=100" + day, 400, ""},
		{strings.TrimPrefix(day, "&"), 400, ""},
	} {
		res, body := e.do(tn.tokens[store.Viewer], "GET", path+tc.query, "", nil)
		if res.StatusCode != tc.status || res.Header.Get("X-Readings-Interval") != tc.wantInterval {
			t.Errorf("GET ?%s: %d X-Readings-Interval=%q; want %d %q (%s)", tc.query, res.StatusCode,
				res.Header.Get("X-Readings-Interval"), tc.status, tc.wantInterval, body)
		}
	}
}

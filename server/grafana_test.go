package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
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
		reading(t, "2024-05-01T00:00:00Z", client.Values{freq: 3000}),
		reading(t, "2024-05-01T00:20:00Z", client.Values{freq: 2000}))
	blueprint, err := e.db.GetBlueprint(t.Context(), tn.orgID, tn.blueprintID)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := blueprint.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.db.CreateSensor(t.Context(), tn.orgID, tn.projectID, "PZ-02", "", &store.Attachment{BlueprintID: tn.blueprintID, Instance: inst})
	if err != nil {
		t.Fatal(err)
	}
	piezo2 := tn
	piezo2.sensorID = second.ID
	freq2 := fmt.Sprint(second.Instance.Inputs[0].ID)
	post(t, e.client(tn.tokens[store.Editor]), piezo2,
		reading(t, "2024-05-01T00:10:00Z", client.Values{freq2: 1000}),
		reading(t, "2024-05-02T00:10:00Z", client.Values{freq2: 1000}))
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

	t.Run("SeveralSensors", func(t *testing.T) {
		// docs/grafana.md, "Several sensors"
		url := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings?sensors=%d,%d", tn.orgID, tn.projectID, tn.instanceID, second.ID) +
			"&keys=names&outputs=true&key=pressure&datetime__gte=${__timeFrom}&datetime__lt=${__timeTo}"
		res, body := e.do(tn.tokens[store.Viewer], "GET", grafana.Replace(url), "", nil)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
		}
		want := `{"items":[` +
			fmt.Sprintf(`{"sensor_id":%d,"sensor":"Acme piezometer","datetime":"2024-05-01T00:00:00.000Z","key":"pressure","value":-900},`, tn.instanceID) +
			fmt.Sprintf(`{"sensor_id":%d,"sensor":"Acme piezometer","datetime":"2024-05-01T00:20:00.000Z","key":"pressure","value":-400},`, tn.instanceID) +
			fmt.Sprintf(`{"sensor_id":%d,"sensor":"PZ-02","datetime":"2024-05-01T00:10:00.000Z","key":"pressure","value":-100}]}`, second.ID) + "\n"
		if got := string(body); got != want {
			t.Errorf("rows = %s\nwant %s", got, want)
		}
	})
	t.Run("Paging", func(t *testing.T) {
		// Every sensor of the project, a reading a page, through the client.
		var rows []string
		p := &client.ListProjectReadingsParams{Limit: ptr(1)}
		for pages := 0; ; pages++ {
			res, err := e.client(tn.tokens[store.Viewer]).ListProjectReadingsWithResponse(t.Context(), tn.orgID, tn.projectID, p)
			if err != nil || res.StatusCode() != 200 || pages > 10 {
				t.Fatalf("page %d: %v %s", pages, err, res.Body)
			}
			for _, r := range res.JSON200.Items {
				rows = append(rows, fmt.Sprintf("%s %s %s=%v", r.Sensor, r.Datetime[5:16], r.Key, r.Value))
			}
			if res.JSON200.NextCursor == nil {
				break
			}
			p.Cursor = res.JSON200.NextCursor
		}
		got := strings.Join(rows, "; ")
		want := fmt.Sprintf("Acme piezometer 05-01T00:00 %[1]s=3000; Acme piezometer 05-01T00:20 %[1]s=2000; "+
			"PZ-02 05-01T00:10 %[2]s=1000; PZ-02 05-02T00:10 %[2]s=1000", freq, freq2)
		if got != want {
			t.Errorf("rows = %s\nwant %s", got, want)
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

// TestGrafanaAnnotations requests the annotation URL of docs/grafana.md,
// "Alarm events as annotations", and checks the four columns it maps.
func TestGrafanaAnnotations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "Annotations")
	before := time.Now().Add(-time.Minute)
	a.post(t, 0, 2500) // digits 6250: Alert
	a.post(t, 1, 3000) // 9000: Alarm
	a.post(t, 2, 2000) // 4000: clear
	after := time.Now().Add(time.Minute)

	url := fmt.Sprintf("/api/v1/org/%d/proj/%d/alarm-events", a.tn.orgID, a.tn.projectID) +
		"?limit=1000&datetime__gte=${__timeFrom}&datetime__lt=${__timeTo}"
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     string
	}{
		{"PanelRange", before, after, "[{Alert triggered digits} {Alarm escalated digits} {Alarm cleared digits}]"},
		{"Earlier", before.Add(-time.Hour), before, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grafana := strings.NewReplacer("${__timeFrom}", fmt.Sprint(tc.from.UnixMilli()), "${__timeTo}", fmt.Sprint(tc.to.UnixMilli()))
			res, body := e.do(a.tn.tokens[store.Viewer], "GET", grafana.Replace(url), "", nil)
			if res.StatusCode != 200 {
				t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
			}
			// Root items; columns created_at (time), level (title), kind
			// (text), target (tags).
			var page struct {
				Items []struct {
					CreatedAt           string `json:"created_at"`
					Level, Kind, Target string
				}
			}
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			rows := make([]string, len(page.Items))
			for i, ev := range page.Items {
				at, err := time.Parse(time.RFC3339, ev.CreatedAt)
				if err != nil || at.Before(tc.from.Truncate(time.Millisecond)) || !at.Before(tc.to) {
					t.Errorf("created_at %q: %v; want an instant in the panel's range", ev.CreatedAt, err)
				}
				rows[i] = fmt.Sprintf("{%s %s %s}", ev.Level, ev.Kind, ev.Target)
			}
			if got := "[" + strings.Join(rows, " ") + "]"; got != tc.want {
				t.Errorf("annotations = %s, want %s", got, tc.want)
			}
		})
	}
}

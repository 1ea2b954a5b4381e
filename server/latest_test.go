package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

func TestLatestReadings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	editor := e.client(tn.tokens[store.Editor])
	viewer := e.client(tn.tokens[store.Viewer])

	post(t, editor, tn,
		reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1}),
		reading(t, "2024-05-01T12:00:02Z", client.Values{"1": 3}),
		reading(t, "2024-05-01T12:00:01Z", client.Values{"1": 2}))
	latestOf := func() map[int64]*client.Reading {
		t.Helper()
		res, err := viewer.LatestReadingsWithResponse(ctx, tn.orgID, tn.projectID, &client.LatestReadingsParams{Outputs: ptr(true)})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("latest: %v %s", err, res.Body)
		}
		out := map[int64]*client.Reading{}
		for _, l := range res.JSON200.Items {
			out[l.SensorId] = l.Reading
		}
		return out
	}

	got := latestOf()
	if r := got[tn.sensorID]; r == nil || r.Inputs["1"] != 3 || at(t, r.Datetime).Format("15:04:05") != "12:00:02" {
		t.Errorf("latest of the plain sensor = %+v, want 12:00:02 → 3", r)
	}
	if r, listed := got[tn.instanceID]; !listed || r != nil {
		t.Errorf("the sensor without readings: listed=%v reading=%+v; want it listed without one", listed, r)
	}
	res, _ := viewer.LatestReadingsWithResponse(ctx, tn.orgID, tn.projectID, nil)
	if want := fmt.Sprintf(`{"sensor_id":%d,"sensor_name":"Acme piezometer"}`, tn.instanceID); !bytes.Contains(res.Body, []byte(want)) {
		t.Errorf("latest = %s, want it to hold %s", res.Body, want)
	}

	t.Run("AfterOverwrite", func(t *testing.T) {
		post(t, editor, tn, reading(t, "2024-05-01T12:00:02Z", client.Values{"1": 30}))
		if r := latestOf()[tn.sensorID]; r.Inputs["1"] != 30 {
			t.Errorf("latest after an overwrite = %v, want 30", r.Inputs)
		}
	})
	t.Run("AfterDelete", func(t *testing.T) {
		res, err := e.client(tn.tokens[store.Admin]).DeleteReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID,
			&client.DeleteReadingsParams{DatetimeGte: "2024-05-01T12:00:02Z", DatetimeLt: "2024-05-01T12:00:03Z"})
		if err != nil || res.StatusCode() != 200 || res.JSON200.Deleted != 1 {
			t.Fatalf("delete: %v %s", err, res.Body)
		}
		if r := latestOf()[tn.sensorID]; r.Inputs["1"] != 2 {
			t.Errorf("latest after deleting the newest = %v, want 2", r.Inputs)
		}
	})
	t.Run("Outputs", func(t *testing.T) {
		sensor, _ := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
		freq := fmt.Sprint(sensor.Instance.Inputs[0].ID)
		digits := fmt.Sprint(sensor.Instance.Outputs[0].ID)
		piezo := tn
		piezo.sensorID = tn.instanceID
		post(t, editor, piezo, reading(t, "2024-05-01T12:00:00Z", client.Values{freq: 3000}))
		if r := latestOf()[tn.instanceID]; r == nil || r.Outputs == nil || (*r.Outputs)[digits] != 9000 {
			t.Errorf("latest with outputs = %+v, want digits 9000", r)
		}
	})
	t.Run("Names", func(t *testing.T) {
		// Without outputs the sensors' instances are not read unless the
		// names need them.
		sensor, _ := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
		key := sensor.Instance.Inputs[0].Key
		res, err := viewer.LatestReadingsWithResponse(ctx, tn.orgID, tn.projectID, &client.LatestReadingsParams{Keys: ptr(client.LatestReadingsParamsKeysNames)})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("latest: %v %s", err, res.Body)
		}
		for _, l := range res.JSON200.Items {
			if l.SensorId != tn.instanceID {
				continue
			}
			if l.Reading == nil || l.Reading.Inputs[key] != 3000 || l.Reading.Outputs != nil {
				t.Errorf("latest with keys=names = %+v, want input %s 3000 and no outputs", l.Reading, key)
			}
		}
	})
	t.Run("Paging", func(t *testing.T) {
		res, _ := viewer.LatestReadingsWithResponse(ctx, tn.orgID, tn.projectID, &client.LatestReadingsParams{Limit: ptr(1)})
		if len(res.JSON200.Items) != 1 || res.JSON200.NextCursor == nil {
			t.Fatalf("first page %s, want one sensor and a cursor", res.Body)
		}
		next, _ := viewer.LatestReadingsWithResponse(ctx, tn.orgID, tn.projectID, &client.LatestReadingsParams{Limit: ptr(1), Cursor: res.JSON200.NextCursor})
		if len(next.JSON200.Items) != 1 || next.JSON200.Items[0].SensorId == res.JSON200.Items[0].SensorId {
			t.Errorf("second page %s", next.Body)
		}
	})
}

func TestDeleteReadingsBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	post(t, e.client(tn.tokens[store.Editor]), tn,
		reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1}),
		reading(t, "2024-05-01T12:00:00.000001Z", client.Values{"1": 2}),
		reading(t, "2024-05-01T12:59:59.999999Z", client.Values{"1": 3}),
		reading(t, "2024-05-01T13:00:00Z", client.Values{"1": 4}))
	admin := e.client(tn.tokens[store.Admin])
	res, err := admin.DeleteReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID,
		&client.DeleteReadingsParams{DatetimeGte: "2024-05-01T12:00:00.000001Z", DatetimeLt: "2024-05-01T13:00:00Z"})
	if err != nil || res.StatusCode() != 200 || res.JSON200.Deleted != 2 {
		t.Fatalf("delete: %v %s, want 2 deleted", err, res.Body)
	}
	left, _ := list(t, admin, tn, client.ListReadingsParams{})
	if len(left) != 2 || left[0].Inputs["1"] != 1 || left[1].Inputs["1"] != 4 {
		t.Errorf("left %+v, want the readings at the two bounds' outsides", left)
	}

	for _, query := range []string{"", "?datetime__gte=2024-05-01T00:00:00Z", "?datetime__lt=2024-05-02T00:00:00Z",
		"?datetime__gte=2024-05-02T00:00:00Z&datetime__lt=2024-05-01T00:00:00Z"} {
		res, body := e.do(tn.tokens[store.Admin], "DELETE", readingsPath(tn)+query, "", nil)
		wantError(t, res.StatusCode, body, 400, "invalid")
	}
	if _, err := e.db.UpdateProject(ctx, tn.orgID, tn.projectID, store.ProjectPatch{State: ptr(store.Archived)}); err != nil {
		t.Fatal(err)
	}
	archived, _ := admin.DeleteReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID,
		&client.DeleteReadingsParams{DatetimeGte: "2024-01-01T00:00:00Z", DatetimeLt: "2025-01-01T00:00:00Z"})
	wantError(t, archived.StatusCode(), archived.Body, 409, "conflict")
	if n := countReadings(t, e); n != 2 {
		t.Errorf("%d readings after refused deletes, want 2", n)
	}
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return b.Bytes()
}

func TestCompression(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.MaxBodyBytes = 64 << 10
	e := newEnvWith(t, cfg, faults{})
	tn := e.newTenant("Acme")
	send := func(body []byte, encoding string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.url+readingsPath(tn), bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Editor])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", encoding)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}

	t.Run("GzipPost", func(t *testing.T) {
		var batch strings.Builder
		batch.WriteString("[")
		for i := range 500 {
			if i > 0 {
				batch.WriteString(",")
			}
			fmt.Fprintf(&batch, `{"datetime":"2024-05-01T12:%02d:%02dZ","inputs":{"1":%d}}`, i/60, i%60, i)
		}
		batch.WriteString("]")
		res, body := send(gzipped(t, batch.String()), "gzip")
		if res.StatusCode != 200 {
			t.Fatalf("gzip POST: %d %s", res.StatusCode, body)
		}
		if n := countReadings(t, e); n != 500 {
			t.Errorf("%d readings stored, want 500", n)
		}
	})
	t.Run("Bomb", func(t *testing.T) {
		// 1 MiB of spaces inside a valid array gzips to about a kilobyte; the
		// 64 KiB limit applies to what it inflates to.
		bomb := gzipped(t, `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}`+strings.Repeat(" ", 1<<20)+"]")
		if len(bomb) > 8<<10 {
			t.Fatalf("the bomb is %d bytes compressed; the test needs it small", len(bomb))
		}
		res, body := send(bomb, "gzip")
		wantError(t, res.StatusCode, body, 413, "too_large")
	})
	t.Run("NotGzip", func(t *testing.T) {
		res, body := send([]byte(`[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}]`), "gzip")
		wantError(t, res.StatusCode, body, 400, "invalid")
	})
	t.Run("Brotli", func(t *testing.T) {
		res, body := send([]byte(`[]`), "br")
		wantError(t, res.StatusCode, body, 415, "unsupported_media_type")
	})
	t.Run("GzipResponse", func(t *testing.T) {
		for _, tt := range []struct {
			path string
			gzip bool
		}{
			{readingsPath(tn), true}, // 500 readings: large
			{"/healthz", false},      // tiny: not worth it
		} {
			req, _ := http.NewRequest("GET", e.url+tt.path, nil)
			req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
			req.Header.Set("Accept-Encoding", "gzip") // set by hand, so the client leaves the body compressed
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if got := res.Header.Get("Content-Encoding") == "gzip"; got != tt.gzip {
				t.Errorf("%s: Content-Encoding %q, want gzip=%v", tt.path, res.Header.Get("Content-Encoding"), tt.gzip)
				continue
			}
			if tt.gzip {
				zr, err := gzip.NewReader(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				var readings []client.Reading
				if err := json.NewDecoder(zr).Decode(&readings); err != nil || len(readings) != 500 {
					t.Errorf("%s: %d readings decoded (%v), want 500", tt.path, len(readings), err)
				}
			}
		}
	})
}

package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// FuzzQueryParameters sends any query string to the operations that take
// parameters, on the real server and database: the answer is a 2xx or a
// 4xx with the JSON error, never a 5xx.
func FuzzQueryParameters(f *testing.F) {
	e := newEnv(f)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	res, err := c.PostReadingsWithResponse(f.Context(), tn.orgID, tn.projectID, tn.sensorID, nil, []client.ReadingInput{
		{Datetime: mustParse("2024-05-01T12:00:00Z"), Inputs: client.Values{"1": 1}},
		{Datetime: mustParse("2024-05-01T13:00:00Z"), Inputs: client.Values{"1": 2, "2": 3}},
	})
	if err != nil || res.StatusCode() != 200 {
		f.Fatalf("fixture: %v", err)
	}
	base := fmt.Sprintf("/api/v1/org/%d/proj/%d", tn.orgID, tn.projectID)
	paths := []string{
		fmt.Sprintf("%s/readings/%d", base, tn.sensorID),
		fmt.Sprintf("%s/readings/%d/aggregates", base, tn.sensorID),
		fmt.Sprintf("%s/readings/%d/export", base, tn.sensorID),
		fmt.Sprintf("%s/readings/%d", base, tn.instanceID),
		base + "/latest",
		base + "/alarm-events",
		base + "/sensors",
		fmt.Sprintf("/api/v1/org/%d/projects", tn.orgID),
	}
	for i, q := range []string{
		"limit=10&order=desc", "datetime__gte=2024-05-01T12:00:00Z&datetime__lt=2024-05-02T00:00:00Z&outputs=true",
		"interval=1h&fn=avg,rate,median&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-05-02T00:00:00Z&tz=Europe/London&fill=null&outputs=true",
		"format=ndjson&outputs=true", "outputs=true&limit=1", "limit=1&cursor=0", "limit=2&cursor=99999999999999999999",
		"offset=1&limit=1", "datetime__gt=2024-05-01T12:00:00.000001%2B02:00", "limit=%00", "order=desc&order=asc",
		"sensor_id=1&level_id=2&datetime__gte=2024-05-01T00:00:00Z&datetime__lt=2024-05-02T00:00:00Z&limit=5",
		"datetime__gte=1714521600000&datetime__lt=1714608000000&limit=1000",
	} {
		f.Add(uint8(i), q)
	}
	// The alarm history's cursors carry the order they were issued with.
	for _, q := range []string{"order=desc&cursor=d9223372036854775807&limit=1", "order=asc&cursor=d1", "order=desc&cursor=d"} {
		f.Add(uint8(slices.Index(paths, base+"/alarm-events")), q)
	}
	f.Fuzz(func(t *testing.T, which uint8, query string) {
		if strings.IndexFunc(query, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			// Not a valid request line: net/http refuses it before the
			// service sees it, with a plain 400 of its own.
			return
		}
		req, err := http.NewRequest("GET", e.url+paths[int(which)%len(paths)]+"?"+query, nil)
		if err != nil {
			return // not a URL a client could send
		}
		req.Header.Set("Authorization", "Bearer "+tn.tokens[store.Viewer])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 500 {
			t.Fatalf("?%s answered %d: %s", query, res.StatusCode, truncate(body, 300))
		}
		if res.StatusCode >= 400 {
			var e client.Error
			if err := json.Unmarshal(body, &e); err != nil || e.Code == "" {
				t.Fatalf("?%s answered %d with %s, not the JSON error", query, res.StatusCode, truncate(body, 300))
			}
		}
	})
}

func mustParse(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

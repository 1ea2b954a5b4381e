package server_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// TestPageMatchesExportLines is an equivalence test: a page of 1,000
// readings is byte for byte the export's NDJSON lines of the same
// readings joined by commas, with and without outputs, flags and keys,
// over readings whose inputs change from one to the next, some marked,
// some outputs missing. Both are written by readingEncoder today, one
// through the page's buffer and one line by line; a page encoded any
// other way (in runs on a second goroutine was tried, see
// docs/performance.md) must keep to it. It fails when a page's readings
// are joined out of order, a comma is left out or doubled, or a row's
// outputs or marks are taken from another row (each checked against the
// runs' variant).
func TestPageMatchesExportLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Runs")
	sensor, err := e.db.GetSensor(t.Context(), store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	if err != nil {
		t.Fatal(err)
	}
	freq, temp := sensor.Instance.Inputs[0].ID, sensor.Instance.Inputs[1].ID
	editor := e.client(tn.tokens[store.Editor])
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]client.ReadingInput, 1200)
	for i := range batch {
		inputs := client.Values{}
		switch i % 7 {
		case 3: // temp alone: no digits, no pressure
			inputs[strconv.FormatInt(temp, 10)] = rng.Float64()*40 - 10
		case 5: // freq alone
			inputs[strconv.FormatInt(freq, 10)] = rng.Float64() * 3000
		default:
			inputs[strconv.FormatInt(freq, 10)] = rng.Float64() * 3000
			inputs[strconv.FormatInt(temp, 10)] = math.Round(rng.Float64()*400) / 10
		}
		batch[i] = client.ReadingInput{Datetime: base.Add(time.Duration(i) * time.Second), Inputs: inputs}
	}
	res, err := editor.PostReadingsWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID, nil, batch)
	if err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("POST: %v %s", err, res.Body)
	}
	for _, f := range []client.FlagInput{
		{Flag: client.FlagInputFlagSuspect, Input: ptr("temp"), From: second(base, 100), To: ptr(second(base, 300)), Reason: "drift"},
		{Flag: client.FlagInputFlagRejected, From: second(base, 500), To: ptr(second(base, 510)), Reason: "swap"},
		{Flag: client.FlagInputFlagSuspect, From: second(base, 700), To: ptr(second(base, 770)), Reason: "storm"},
	} {
		res, err := editor.SetFlagWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID, f)
		if err != nil || res.JSON201 == nil {
			t.Fatalf("set flag %+v: %v %s", f, err, res.Body)
		}
	}
	path := fmt.Sprintf("/api/v1/org/%d/proj/%d/readings/%d", tn.orgID, tn.projectID, tn.instanceID)
	for _, query := range []string{"outputs=true", "outputs=true&flags=true", "outputs=true&flags=true&keys=names", "flags=true", ""} {
		t.Run(query, func(t *testing.T) {
			res, page := e.do(tn.tokens[store.Viewer], "GET", path+"?limit=1000&"+query, "", nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET page: %d %s", res.StatusCode, page)
			}
			// The page's range: its Link starts the next page past its last reading.
			to := linkBound(t, res.Header)
			res, lines := e.do(tn.tokens[store.Viewer], "GET", path+"/export?format=ndjson&datetime__lt="+url.QueryEscape(to)+"&"+query, "", nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET export: %d %s", res.StatusCode, lines)
			}
			want := "[" + strings.ReplaceAll(strings.TrimSuffix(string(lines), "\n"), "\n", ",") + "]\n"
			if n := bytes.Count(lines, []byte("\n")); n != 1000 {
				t.Fatalf("the export up to the page's end has %d readings, want 1000", n)
			}
			if string(page) != want {
				i := 0
				for i < min(len(page), len(want)) && page[i] == want[i] {
					i++
				}
				t.Fatalf("page differs from the export's lines at byte %d of %d:\npage   %.200s\nexport %.200s", i, len(want), page[i:], want[i:])
			}
		})
	}
}

// linkBound is the instant just past a page's last reading, from its Link.
func linkBound(t *testing.T, header http.Header) string {
	t.Helper()
	next, ok := linkParams(t, header)
	if !ok || next.DatetimeGt == nil {
		t.Fatalf("Link %q names no datetime__gt", header.Get("Link"))
	}
	last, err := time.Parse(time.RFC3339Nano, *next.DatetimeGt)
	if err != nil {
		t.Fatal(err)
	}
	return last.Add(time.Microsecond).Format(time.RFC3339Nano)
}

func second(base time.Time, s int) client.Datetime {
	return base.Add(time.Duration(s) * time.Second).Format(time.RFC3339)
}

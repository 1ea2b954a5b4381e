package server_test

import (
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// postFile sends a file of readings through the generated client.
func postFile(t *testing.T, c *client.ClientWithResponses, tn tenant, sensorID int64, params client.PostReadingsParams, body string) *client.PostReadingsResponse {
	t.Helper()
	res, err := c.PostReadingsWithBodyWithResponse(t.Context(), tn.orgID, tn.projectID, sensorID, &params, "text/csv", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// fileImport is the answer to a file that was accepted.
func fileImport(t *testing.T, res *client.PostReadingsResponse) client.FileImport {
	t.Helper()
	if res.StatusCode() != http.StatusOK {
		t.Fatalf("POST file: %d %s, want 200", res.StatusCode(), res.Body)
	}
	answer, err := res.JSON200.AsFileImport()
	if err != nil {
		t.Fatal(err)
	}
	return answer
}

// wantRefusal checks that an error names where (details[key] = at) and
// says each of says.
func wantRefusal(t *testing.T, got client.Error, key, at string, says ...string) {
	t.Helper()
	for _, want := range says {
		if !strings.Contains(got.Message, want) {
			t.Errorf("message %q, want it to say %q", got.Message, want)
		}
	}
	if got.Details == nil || fmt.Sprint((*got.Details)[key]) != at {
		t.Errorf("details %v, want %s %s", got.Details, key, at)
	}
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stored lists a sensor's readings as "datetime id=value …" lines.
func stored(t *testing.T, c *client.ClientWithResponses, tn tenant, sensorID int64) []string {
	t.Helper()
	tn.sensorID = sensorID
	readings, _ := list(t, c, tn, client.ListReadingsParams{})
	var lines []string
	for _, r := range readings {
		var inputs []string
		for id, v := range r.Inputs {
			inputs = append(inputs, fmt.Sprintf("%s=%v", id, v))
		}
		slices.Sort(inputs)
		lines = append(lines, string(r.Datetime)+" "+strings.Join(inputs, " "))
	}
	return lines
}

// piezometerIDs are the decimal input ids of the tenant's piezometer, by key.
func piezometerIDs(t *testing.T, c *client.ClientWithResponses, tn tenant) map[string]string {
	t.Helper()
	sensor, err := c.GetSensorWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID)
	if err != nil || sensor.StatusCode() != http.StatusOK {
		t.Fatalf("GET sensor: %v", err)
	}
	return ids(*sensor.JSON200)
}

func TestFileTOA5(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	id := piezometerIDs(t, c, tn)
	dam := fixture(t, "dam.toa5")
	zurich := client.PostReadingsParams{Tz: ptr("Europe/Zurich")}

	t.Run("FoldWithoutDstIsRefused", func(t *testing.T) {
		res := postFile(t, c, tn, tn.instanceID, zurich, dam)
		got := wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid")
		wantRefusal(t, got, "line", "6", "line 6, column TIMESTAMP", "happens twice in Europe/Zurich", "dst=earlier")
		if n := countReadings(t, e); n != 0 {
			t.Errorf("%d readings stored from a refused file, want 0", n)
		}
	})

	t.Run("DryRun", func(t *testing.T) {
		params := zurich
		params.Dst, params.DryRun = ptr(client.Later), ptr(true)
		answer := fileImport(t, postFile(t, c, tn, tn.instanceID, params, dam))
		if answer.Preview == nil || len(*answer.Preview) != 3 {
			t.Fatalf("preview %v, want the file's 3 readings", answer.Preview)
		}
		if got, want := string((*answer.Preview)[1].Datetime), "2024-10-27T01:30:00.000Z"; got != want {
			t.Errorf("the fold's reading with dst=later at %s, want %s", got, want)
		}
		if n := countReadings(t, e); n != 0 {
			t.Errorf("%d readings stored by a dry run, want 0", n)
		}
	})

	params := zurich
	params.Dst = ptr(client.Earlier)
	answer := fileImport(t, postFile(t, c, tn, tn.instanceID, params, dam))
	want := client.FileImport{Readings: 3, New: 3, Skipped: 1, IgnoredColumns: []string{"RECORD", "batt_volt"}}
	if fmt.Sprint(answer) != fmt.Sprint(want) {
		t.Errorf("answer %+v, want %+v", answer, want)
	}
	got := stored(t, c, tn, tn.instanceID)
	wantStored := []string{
		"2024-10-26T23:30:00.000Z " + id["freq"] + "=2803.5 " + id["temp"] + "=11.2",
		"2024-10-27T00:30:00.000Z " + id["freq"] + "=2803.25",
		"2024-10-27T03:30:00.250Z " + id["freq"] + "=2802.75 " + id["temp"] + "=11",
	}
	if !slices.Equal(got, wantStored) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantStored, "\n"))
	}

	t.Run("ReuploadReplaces", func(t *testing.T) {
		answer := fileImport(t, postFile(t, c, tn, tn.instanceID, params, dam))
		if answer.New != 0 || answer.Replaced != 3 {
			t.Errorf("re-upload: %d new, %d replaced; want 0 and 3", answer.New, answer.Replaced)
		}
	})
}

func TestFileCSV(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	zurich := client.PostReadingsParams{Tz: ptr("Europe/Zurich")}

	answer := fileImport(t, postFile(t, c, tn, tn.sensorID, zurich, fixture(t, "wall.csv")))
	if got, want := fmt.Sprint(answer), fmt.Sprint(client.FileImport{Readings: 3, New: 3, IgnoredColumns: []string{"comment"}}); got != want {
		t.Errorf("answer %s, want %s", got, want)
	}
	got := stored(t, c, tn, tn.sensorID)
	want := []string{
		"2024-03-31T00:30:00.000Z 1=1.5 2=2.5",
		"2024-03-31T00:59:59.999Z 2=3",
		"2024-03-31T01:30:00.000Z 1=1.75",
	}
	if !slices.Equal(got, want) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	future := time.Now().UTC().Add(48 * time.Hour).Format("2006-01-02 15:04:05")
	for _, tc := range []struct {
		name, body, wantInMessage string
		params                    client.PostReadingsParams
	}{
		{"Gap", "datetime,1\n2024-03-31 02:30:00,1\n", "line 2, column datetime: 2024-03-31 02:30:00 does not exist in Europe/Zurich", zurich},
		{"NotANumber", "datetime,1,2\n2024-05-01 00:00:00,1,2\n2024-05-01 00:10:00,1,two\n", `line 3, column 2: "two" is not a finite number`, zurich},
		{"Infinity", "datetime,1\n2024-05-01 00:00:00,INF\n", `line 2, column 1: "INF" is not a finite number`, zurich},
		{"BadDatetime", "datetime,1\n01/05/2024 00:00,1\n", "line 2, column datetime: datetime \"01/05/2024 00:00\"", zurich},
		{"MissingCell", "datetime,1,2\n2024-05-01 00:00:00,1\n", "line 2: the line has 2 cells; the header has 3", zurich},
		{"BadQuote", "datetime,1\n2024-05-01 00:00:00,\"1\n", "line 2", zurich},
		{"NoInputColumn", "datetime,temp\n2024-05-01 00:00:00,1\n", "line 1: no column names an input", zurich},
		{"NoDatetimeColumn", "time,1\n2024-05-01 00:00:00,1\n", "line 1, column time: the first column must be datetime", zurich},
		{"SameInputTwice", "datetime,1,1\n", `line 1, column 1: columns "1" and "1" both feed input 1`, zurich},
		{"OnlyHeader", "datetime,1\n", "the file has no readings", zurich},
		{"EveryCellMissing", "datetime,1\n2024-05-01 00:00:00,NAN\n", "the file has no readings", zurich},
		{"Future", "datetime,1\n2024-05-01 00:00:00,1\n" + future + ",2\n", "line 3: datetime", client.PostReadingsParams{}},
		{"UnknownZone", "datetime,1\n2024-05-01 00:00:00,1\n", `tz "Mars/Olympus" is not an IANA time zone`, client.PostReadingsParams{Tz: ptr("Mars/Olympus")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := postFile(t, c, tn, tn.sensorID, tc.params, tc.body)
			got := wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid")
			if !strings.Contains(got.Message, tc.wantInMessage) {
				t.Errorf("message %q, want it to say %q", got.Message, tc.wantInMessage)
			}
		})
	}
	if n := countReadings(t, e); n != 3 {
		t.Errorf("%d readings stored, want the first file's 3: refused files store nothing", n)
	}

	t.Run("FileParametersWithJSON", func(t *testing.T) {
		res, err := c.PostReadingsWithResponse(t.Context(), tn.orgID, tn.projectID, tn.sensorID, &client.PostReadingsParams{DryRun: ptr(true)},
			client.ReadingBatch{reading(t, "2024-05-01T00:00:00Z", client.Values{"1": 1})})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid")
	})
}

// TestFileReupload posts files over stored readings: in order they
// overwrite a chunk at a time, out of order the rest is staged; the counts
// are exact either way, the later reading wins, and a bad line anywhere
// stores nothing.
func TestFileReupload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	file := func(lines ...string) string { return "datetime,1\n" + strings.Join(lines, "\n") + "\n" }
	day := "2024-05-01T00:"

	for _, step := range []struct {
		name          string
		body          string
		new, replaced int64
		stored        []string // minute=value
		span          string   // first and last minute, as the audit says an overwrite's
	}{
		{"First", file("2024-05-01 00:00:00,1", "2024-05-01 00:10:00,1", "2024-05-01 00:20:00,1"), 3, 0,
			[]string{"00=1", "10=1", "20=1"}, ""},
		{"OrderedReupload", file("2024-05-01 00:00:00,2", "2024-05-01 00:10:00,2", "2024-05-01 00:20:00,2"), 0, 3,
			[]string{"00=2", "10=2", "20=2"}, "00-20"},
		{"PartialOverlap", file("2024-05-01 00:10:00,3", "2024-05-01 00:20:00,3", "2024-05-01 00:30:00,3", "2024-05-01 00:40:00,3"), 2, 2,
			[]string{"00=2", "10=3", "20=3", "30=3", "40=3"}, "10-40"},
		// 00 and 10 overwrite in order; from 05 on staged: 10 again is the
		// file's own (counted once, the later wins), 05 and 50 are new.
		{"OutOfOrderAfterOverlap", file("2024-05-01 00:00:00,4", "2024-05-01 00:10:00,4", "2024-05-01 00:05:00,4", "2024-05-01 00:10:00,5", "2024-05-01 00:50:00,4"), 2, 2,
			[]string{"00=4", "05=4", "10=5", "20=3", "30=3", "40=3", "50=4"}, "00-50"},
	} {
		t.Run(step.name, func(t *testing.T) {
			// A dry run first tells what the upload will do, and does nothing.
			before := stored(t, c, tn, tn.sensorID)
			dry := fileImport(t, postFile(t, c, tn, tn.sensorID, client.PostReadingsParams{DryRun: ptr(true)}, step.body))
			if dry.New != step.new || dry.Replaced != step.replaced {
				t.Errorf("dry run: %d new, %d replaced; want %d and %d, as the upload", dry.New, dry.Replaced, step.new, step.replaced)
			}
			if after := stored(t, c, tn, tn.sensorID); !slices.Equal(after, before) {
				t.Errorf("a dry run changed the stored readings")
			}
			answer := fileImport(t, postFile(t, c, tn, tn.sensorID, client.PostReadingsParams{}, step.body))
			if answer.New != step.new || answer.Replaced != step.replaced {
				t.Errorf("%d new, %d replaced; want %d and %d", answer.New, answer.Replaced, step.new, step.replaced)
			}
			var want []string
			for _, s := range step.stored {
				minute, value, _ := strings.Cut(s, "=")
				want = append(want, day+minute+":00.000Z 1="+value)
			}
			if got := stored(t, c, tn, tn.sensorID); !slices.Equal(got, want) {
				t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if step.span != "" {
				from, to, _ := strings.Cut(step.span, "-")
				want := map[string]any{"new": float64(step.new), "replaced": float64(step.replaced),
					"from": "2024-05-01T00:" + from + ":00.000000Z", "to": "2024-05-01T00:" + to + ":00.000000Z"}
				res, err := c.ListProjectAuditWithResponse(t.Context(), tn.orgID, tn.projectID, &client.ListProjectAuditParams{SensorId: &tn.sensorID, Kind: &client.AuditKind{"overwrite"}, Limit: ptr(1)})
				if err != nil || res.JSON200 == nil || len(res.JSON200.Items) != 1 {
					t.Fatalf("audit of the overwrite: %v %s", err, res.Body)
				}
				if got := res.JSON200.Items[0].After; !reflect.DeepEqual(got, want) {
					t.Errorf("the audit says the overwrite was %v; want %v", got, want)
				}
			}
		})
	}

	t.Run("BadLastLineStoresNothing", func(t *testing.T) {
		// Past several chunks of the ordered overwrite, then a bad line.
		start := time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)
		lines := func(value string) []string {
			var out []string
			for i := range 12_000 {
				out = append(out, start.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05")+","+value)
			}
			return out
		}
		answer := fileImport(t, postFile(t, c, tn, tn.sensorID, client.PostReadingsParams{}, file(lines("1")...)))
		if answer.New != 12_000 || answer.Replaced != 0 {
			t.Fatalf("%d new, %d replaced; want 12000 and 0", answer.New, answer.Replaced)
		}
		before := stored(t, c, tn, tn.sensorID)
		res := postFile(t, c, tn, tn.sensorID, client.PostReadingsParams{}, file(append(lines("9"), "2024-05-03 00:00:00,nine")...))
		got := wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid")
		wantRefusal(t, got, "line", "12002", "line 12002, column 1")
		if n := countReadings(t, e); n != 7+12_000 {
			t.Errorf("%d readings stored, want %d", n, 7+12_000)
		}
		if after := stored(t, c, tn, tn.sensorID); !slices.Equal(after, before) {
			t.Errorf("a refused file changed the stored readings")
		}
	})
}

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/server"
	"github.com/sensorreadings/readings/store"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func reading(t *testing.T, datetime string, inputs client.Values) client.ReadingInput {
	return client.ReadingInput{Datetime: at(t, datetime), Inputs: inputs}
}

// post stores readings and fails the test unless they are accepted.
func post(t *testing.T, c *client.ClientWithResponses, tn tenant, batch ...client.ReadingInput) {
	t.Helper()
	res, err := c.PostReadingsWithResponse(context.Background(), tn.orgID, tn.projectID, tn.sensorID, nil, batch)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != http.StatusOK || string(bytes.TrimSpace(res.Body)) != `"OK"` {
		t.Fatalf("POST readings: %d %s, want 200 \"OK\"", res.StatusCode(), res.Body)
	}
}

// list gets one page of readings and fails the test unless it is a 200.
func list(t *testing.T, c *client.ClientWithResponses, tn tenant, p client.ListReadingsParams) ([]client.Reading, http.Header) {
	t.Helper()
	res, err := c.ListReadingsWithResponse(context.Background(), tn.orgID, tn.projectID, tn.sensorID, &p)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != http.StatusOK {
		t.Fatalf("GET readings: %d %s", res.StatusCode(), res.Body)
	}
	return *res.JSON200, res.HTTPResponse.Header
}

func TestReadingsRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])

	post(t, c, tn,
		reading(t, "2024-05-01T12:00:00.123456Z", client.Values{"2": 1.5, "1": -2e-7}),
		reading(t, "2024-05-01T14:00:01+02:00", client.Values{"9223372036854775807": 1e21}),
	)
	// The raw body shows the datetime format exactly: UTC, three digits.
	_, body := e.do(tn.tokens[store.Viewer], "GET", readingsPath(tn), "", nil)
	want := fmt.Sprintf(`[{"id":"%[1]d-1714564800123456","datetime":"2024-05-01T12:00:00.123Z","inputs":{"1":-2e-7,"2":1.5}},`+
		`{"id":"%[1]d-1714564801000000","datetime":"2024-05-01T12:00:01.000Z","inputs":{"9223372036854775807":1e+21}}]`, tn.sensorID)
	if got := string(bytes.TrimSpace(body)); got != want {
		t.Errorf("GET readings =\n%s\nwant\n%s", got, want)
	}
}

func TestReadingsOverwrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])

	post(t, c, tn,
		reading(t, "2024-05-01T12:00:00.000001Z", client.Values{"1": 1, "2": 2}),
		reading(t, "2024-05-01T12:00:00.000002Z", client.Values{"1": 10}),
	)
	before, _ := list(t, c, tn, client.ListReadingsParams{})
	// Equal to the microsecond, written with an offset: replaces the first
	// reading's inputs (all of them: input 2 goes) and keeps its id.
	post(t, c, tn, reading(t, "2024-05-01T13:00:00.000001+01:00", client.Values{"1": 100}))
	after, _ := list(t, c, tn, client.ListReadingsParams{})

	if len(after) != 2 {
		t.Fatalf("%d readings after the overwrite, want 2: %+v", len(after), after)
	}
	if after[0].Id != before[0].Id {
		t.Errorf("overwritten reading's id = %q, want %q (kept)", after[0].Id, before[0].Id)
	}
	if got, want := after[0].Inputs, (client.Values{"1": 100}); !equalValues(got, want) {
		t.Errorf("overwritten inputs = %v, want %v", got, want)
	}
	if got, want := after[1].Inputs, (client.Values{"1": 10}); !equalValues(got, want) {
		t.Errorf("reading one microsecond later = %v, want %v (untouched)", got, want)
	}
}

func TestReadingsDuplicateInBatchLaterWins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])

	post(t, c, tn, reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 0}))
	post(t, c, tn,
		reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1}),
		reading(t, "2024-05-01T11:00:00Z", client.Values{"1": 2}),
		reading(t, "2024-05-01T14:00:00+02:00", client.Values{"1": 3}), // the same instant as the first
	)
	got, _ := list(t, c, tn, client.ListReadingsParams{})
	if len(got) != 2 || got[0].Inputs["1"] != 2 || got[1].Inputs["1"] != 3 {
		t.Errorf("readings = %+v, want 11:00 → 2 and 12:00 → 3", got)
	}
}

func TestReadingsPostIsAtomic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	token := tn.tokens[store.Editor]

	var batch strings.Builder
	batch.WriteString("[")
	for i := range 5 {
		fmt.Fprintf(&batch, `{"datetime":"2024-05-01T12:00:0%dZ","inputs":{"1":%d}},`, i, i)
	}
	batch.WriteString(`{"datetime":"2024-05-01T12:00:06","inputs":{"1":6}}]`)

	res, body := e.do(token, "POST", readingsPath(tn), "application/json", strings.NewReader(batch.String()))
	got := wantError(t, res.StatusCode, body, http.StatusBadRequest, "invalid")
	if !strings.Contains(got.Message, "element 5") || !strings.Contains(got.Message, "no zone") {
		t.Errorf("message %q should name element 5 and the missing zone", got.Message)
	}
	if got.Details == nil || (*got.Details)["index"] != float64(5) {
		t.Errorf("details %v, want index 5", got.Details)
	}
	if n := countReadings(t, e); n != 0 {
		t.Errorf("%d readings stored from a rejected batch, want 0", n)
	}
}

func countReadings(t *testing.T, e *env) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), "SELECT count(*) FROM readings").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReadingsBadBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	token := tn.tokens[store.Editor]

	for _, tc := range []struct {
		name, body, wantInMessage string
	}{
		{"NotJSON", `[{"datetime":`, "cut short"},
		{"Object", `{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}`, "JSON array"},
		{"Empty", `[]`, "empty"},
		{"Null", `null`, "JSON array"},
		{"ElementNotObject", `[1]`, "JSON object"},
		{"UnknownField", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1},"id":"7"}]`, `"id" is not allowed`},
		{"OutputsField", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1},"outputs":{}}]`, `"outputs" is not allowed`},
		{"CaseVariant", `[{"Datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}]`, `"Datetime" is not allowed`},
		{"DuplicateField", `[{"datetime":"2024-05-01T12:00:00Z","datetime":"2024-05-01T12:00:01Z","inputs":{"1":1}}]`, "twice"},
		{"DuplicateInput", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1,"1":2}}]`, "twice"},
		{"NoDatetime", `[{"inputs":{"1":1}}]`, "datetime is missing"},
		{"NoInputs", `[{"datetime":"2024-05-01T12:00:00Z"}]`, "inputs is missing"},
		{"EmptyInputs", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{}}]`, "inputs is empty"},
		{"NoZone", `[{"datetime":"2024-05-01T12:00:00","inputs":{"1":1}}]`, "no zone"},
		{"SevenDigits", `[{"datetime":"2024-05-01T12:00:00.1234567Z","inputs":{"1":1}}]`, "7 fractional digits"},
		{"DatetimeNumber", `[{"datetime":1714564800,"inputs":{"1":1}}]`, "must be a string"},
		{"LeadingZeroID", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"01":1}}]`, `"01" is not an input id`},
		{"ZeroID", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"0":1}}]`, `"0" is not an input id`},
		{"NegativeID", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"-1":1}}]`, `"-1" is not an input id`},
		{"NameID", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"temp":1}}]`, `"temp" is not an input id`},
		{"OverflowID", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"9223372036854775808":1}}]`, "is not an input id"},
		{"StringValue", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":"1.5"}}]`, "must be a number"},
		{"NaNString", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":"NaN"}}]`, "must be a number"},
		{"NullValue", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":null}}]`, "must be a number"},
		{"HugeValue", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1e400}}]`, "beyond a 64-bit float"},
		{"TrailingData", `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}] []`, "nothing after it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := e.do(token, "POST", readingsPath(tn), "application/json", strings.NewReader(tc.body))
			got := wantError(t, res.StatusCode, body, http.StatusBadRequest, "invalid")
			if !strings.Contains(got.Message, tc.wantInMessage) {
				t.Errorf("message %q, want it to say %q", got.Message, tc.wantInMessage)
			}
		})
	}
	if n := countReadings(t, e); n != 0 {
		t.Errorf("%d readings stored from rejected bodies, want 0", n)
	}
}

func TestReadingsAcrossTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme := e.newTenant("Acme")
	globex := e.newTenant("Globex")
	c := e.client(acme.tokens[store.Owner])
	post(t, e.client(globex.tokens[store.Editor]), globex, reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1}))

	// Acme's owner names Globex's sensor through Acme's org and project, and
	// through a second Acme project: never found.
	other, err := e.db.CreateProject(context.Background(), acme.orgID, "second", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                 string
		org, project, sensor int64
	}{
		{"OtherOrgsSensor", acme.orgID, acme.projectID, globex.sensorID},
		{"OtherOrgsProject", acme.orgID, globex.projectID, globex.sensorID},
		{"OtherProjectOfSameOrg", acme.orgID, other.ID, acme.sensorID},
		{"NoSuchSensor", acme.orgID, acme.projectID, 999999},
	} {
		t.Run(tc.name, func(t *testing.T) {
			get, err := c.ListReadingsWithResponse(context.Background(), tc.org, tc.project, tc.sensor, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, get.StatusCode(), get.Body, 404, "not_found")
			postRes, err := c.PostReadingsWithResponse(context.Background(), tc.org, tc.project, tc.sensor, nil,
				[]client.ReadingInput{reading(t, "2024-05-01T13:00:00Z", client.Values{"1": 2})})
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, postRes.StatusCode(), postRes.Body, 404, "not_found")
		})
	}
	if n := countReadings(t, e); n != 1 {
		t.Errorf("%d readings, want Globex's 1", n)
	}
}

func TestReadingsArchivedProject(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	admin := e.client(tn.tokens[store.Admin])
	ctx := context.Background()
	post(t, admin, tn, reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1}))

	archive, err := admin.ProjectActionWithResponse(ctx, tn.orgID, tn.projectID, client.ProjectAction{Action: client.Archive})
	if err != nil || archive.StatusCode() != 200 || archive.JSON200.State != client.Archived {
		t.Fatalf("archive: %v %s", err, archive.Body)
	}
	res, err := admin.PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, nil, []client.ReadingInput{reading(t, "2024-05-01T13:00:00Z", client.Values{"1": 2})})
	if err != nil {
		t.Fatal(err)
	}
	got := wantError(t, res.StatusCode(), res.Body, 409, "conflict")
	if !strings.Contains(got.Message, "archived") {
		t.Errorf("message %q should say the project is archived", got.Message)
	}
	if readings, _ := list(t, admin, tn, client.ListReadingsParams{}); len(readings) != 1 {
		t.Errorf("an archived project serves %d readings, want its 1", len(readings))
	}

	restore, err := admin.ProjectActionWithResponse(ctx, tn.orgID, tn.projectID, client.ProjectAction{Action: client.Restore})
	if err != nil || restore.StatusCode() != 200 || restore.JSON200.State != client.Active {
		t.Fatalf("restore: %v %s", err, restore.Body)
	}
	post(t, admin, tn, reading(t, "2024-05-01T13:00:00Z", client.Values{"1": 2}))
}

func TestReadingsTooLarge(t *testing.T) {
	t.Parallel()
	cfg := config{Config: server.Config{MaxBatch: 10, MaxBodyBytes: 4096}}
	e := newEnvWith(t, cfg, faults{})
	tn := e.newTenant("Acme")
	token := tn.tokens[store.Editor]

	batchOf := func(n int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"datetime":"2024-05-01T12:00:%02dZ","inputs":{"1":%d}}`, i, i)
		}
		b.WriteString("]")
		return b.String()
	}
	t.Run("Batch", func(t *testing.T) {
		res, body := e.do(token, "POST", readingsPath(tn), "application/json", strings.NewReader(batchOf(11)))
		got := wantError(t, res.StatusCode, body, 413, "too_large")
		if !strings.Contains(got.Message, "at most 10 readings") {
			t.Errorf("message %q should say the limit of 10 readings", got.Message)
		}
	})
	t.Run("BatchAtLimit", func(t *testing.T) {
		res, body := e.do(token, "POST", readingsPath(tn), "application/json", strings.NewReader(batchOf(10)))
		if res.StatusCode != 200 {
			t.Fatalf("a batch of exactly 10: %d %s", res.StatusCode, body)
		}
	})
	big := `[{"datetime":"2024-05-01T12:00:00Z","inputs":{"1":1}}` + strings.Repeat(" ", 5000) + "]"
	t.Run("Body", func(t *testing.T) {
		res, body := e.do(token, "POST", readingsPath(tn), "application/json", strings.NewReader(big))
		got := wantError(t, res.StatusCode, body, 413, "too_large")
		if !strings.Contains(got.Message, "4 KiB") {
			t.Errorf("message %q should say the limit, 4 KiB", got.Message)
		}
	})
	t.Run("BodyWithoutLength", func(t *testing.T) {
		// A chunked body has no Content-Length: the limit holds while reading.
		res, body := e.do(token, "POST", readingsPath(tn), "application/json", io.MultiReader(strings.NewReader(big)))
		wantError(t, res.StatusCode, body, 413, "too_large")
	})
	t.Run("OtherOperations", func(t *testing.T) {
		res, body := e.do(tn.tokens[store.Owner], "POST", fmt.Sprintf("/api/v1/org/%d/projects", tn.orgID), "application/json",
			strings.NewReader(`{"name":"x","description":"`+strings.Repeat("y", 5000)+`"}`))
		wantError(t, res.StatusCode, body, 413, "too_large")
	})
	if n := countReadings(t, e); n != 10 {
		t.Errorf("%d readings stored, want the 10 of the batch at the limit", n)
	}
}

// TestReadingsRefusedBodyIsReadToTheEnd: a client that writes its whole
// body before it reads the answer, as Python's http.client and Java's
// HttpURLConnection do, gets the JSON 400 for a body within the limit that
// is refused at its first reading, rather than a connection closed while it
// still sends. A client that stops sending part way is answered once the
// drain's deadline has passed, not waited for.
func TestReadingsRefusedBodyIsReadToTheEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	// 4.4 MiB: a first reading of 300 inputs (at most 100), then readings of
	// 100 inputs each.
	var b bytes.Buffer
	for i := 0; b.Len() < 44<<20/10; i++ {
		b.WriteString(map[bool]string{true: "[", false: ","}[i == 0])
		fmt.Fprintf(&b, `{"datetime":"2024-05-01T%02d:%02d:%02dZ","inputs":{`, i/3600, i/60%60, i%60)
		for id := range map[bool]int{true: 300, false: 100}[i == 0] {
			if id > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%d":%d.25`, id+1, i)
		}
		b.WriteString("}}")
	}
	b.WriteString("]")
	body := b.Bytes()

	t.Run("WholeBodyFirst", func(t *testing.T) {
		res, answer := e.sendBodyFirst(t, tn.tokens[store.Editor], readingsPath(tn), len(body), body)
		if got := wantError(t, res.StatusCode, answer, 400, "invalid"); !strings.Contains(got.Message, "at most 100 inputs") {
			t.Errorf("message %q, want it to say the limit of 100 inputs", got.Message)
		}
	})
	t.Run("StalledClient", func(t *testing.T) {
		res, answer := e.sendBodyFirst(t, tn.tokens[store.Editor], readingsPath(tn), len(body), body[:64<<10])
		wantError(t, res.StatusCode, answer, 400, "invalid")
	})
	t.Run("WaitingFor100Continue", func(t *testing.T) {
		// Refused before its body is read: the client is not asked for it.
		res, answer := e.sendBodyFirst(t, "rdg_"+strings.Repeat("A", 43), readingsPath(tn), len(body), nil, "Expect: 100-continue")
		wantError(t, res.StatusCode, answer, 401, "unauthorized")
	})
	if n := countReadings(t, e); n != 0 {
		t.Errorf("%d readings stored, want none", n)
	}
}

// sendBodyFirst POSTs part, the first bytes of a JSON body of length bytes,
// with the extra header lines, on a connection of its own, and writes all
// of it before it reads the answer, within a minute. Its socket buffer is small, so that on loopback
// the body cannot hide in buffers any more than it could on a network.
func (e *env) sendBodyFirst(t *testing.T, token, path string, length int, part []byte, extra ...string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetWriteBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n",
		path, conn.RemoteAddr(), token, length)
	for _, line := range extra {
		head += line + "\r\n"
	}
	head += "\r\n"
	if _, err := conn.Write(append([]byte(head), part...)); err != nil {
		t.Fatalf("writing the body: %v (the service closed the connection before answering)", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return res, answer
}

func equalValues(a, b client.Values) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func TestReadingsFromTheFuture(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	now := time.Now().UTC().Truncate(time.Second)
	soon := client.ReadingInput{Datetime: now.Add(23 * time.Hour), Inputs: client.Values{"1": 1}}
	tooLate := client.ReadingInput{Datetime: now.Add(25 * time.Hour), Inputs: client.Values{"1": 2}}

	res, err := c.PostReadingsWithResponse(t.Context(), tn.orgID, tn.projectID, tn.sensorID, nil, client.ReadingBatch{soon, tooLate})
	if err != nil {
		t.Fatal(err)
	}
	got := wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid")
	wantRefusal(t, got, "index", "1", "element 1", "more than 24h after the server's clock")
	if n := countReadings(t, e); n != 0 {
		t.Errorf("%d readings stored from a refused batch, want 0", n)
	}
	post(t, c, tn, soon)

	t.Run("NoLimit", func(t *testing.T) {
		cfg := defaultConfig()
		cfg.core.MaxFuture = 0
		e := newEnvWith(t, cfg, faults{})
		tn := e.newTenant("Acme")
		post(t, e.client(tn.tokens[store.Editor]), tn, client.ReadingInput{Datetime: now.AddDate(10, 0, 0), Inputs: client.Values{"1": 1}})
	})
}

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A batch's JSON says, in every reading, which batch it is and where in it.
func TestAppendBatch(t *testing.T) {
	body := appendBatch(nil, 42, 3, rand.New(rand.NewPCG(1, 2)))
	var got []struct {
		Datetime time.Time          `json:"datetime"`
		Inputs   map[string]float64 `json:"inputs"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("appendBatch gave invalid JSON %s: %v", body, err)
	}
	if len(got) != 3 {
		t.Fatalf("appendBatch(42, 3) has %d readings, want 3", len(got))
	}
	for i, r := range got {
		if want := time.Date(2020, 1, 1, 0, 0, 42, i*1000, time.UTC); !r.Datetime.Equal(want) {
			t.Errorf("reading %d at %v, want %v", i, r.Datetime, want)
		}
		if r.Inputs["1"] != 42 || r.Inputs["2"] != float64(i) {
			t.Errorf("reading %d has inputs %v, want 1=42 and 2=%d", i, r.Inputs, i)
		}
	}
}

var readAckLogTests = []struct {
	name    string
	log     string
	want    []sentBatch
	wantErr string
}{
	{name: "Acked", log: "sent 1 10 100\nack 1 10 100\nsent 2 11 100\n",
		want: []sentBatch{{sensor: 1, tag: 10, readings: 100, acked: true}, {sensor: 2, tag: 11, readings: 100}}},
	{name: "Empty", log: ""},
	{name: "SentTwice", log: "sent 1 10 100\nsent 2 10 100\n", wantErr: "sent twice"},
	{name: "AckNeverSent", log: "ack 1 10 100\n", wantErr: "never sent"},
	{name: "AckOtherSensor", log: "sent 1 10 100\nack 2 10 100\n", wantErr: "another sensor"},
	{name: "Malformed", log: "sent 1 10\n", wantErr: "malformed"},
	{name: "UnknownEvent", log: "lost 1 10 100\n", wantErr: "malformed"},
	{name: "EmptyBatch", log: "sent 1 10 0\n", wantErr: "batch size"},
	{name: "WithTimes", log: "sent 1 10 100 1700000000000001\nack 1 10 100 1700000000250000\n",
		want: []sentBatch{{sensor: 1, tag: 10, readings: 100, acked: true,
			sentAt: time.UnixMicro(1700000000000001), ackedAt: time.UnixMicro(1700000000250000)}}},
	{name: "TooManyFields", log: "sent 1 10 100 1700000000000001 9\n", wantErr: "malformed"},
}

func TestReadAckLogs(t *testing.T) {
	for _, tt := range readAckLogTests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "acks")
			if err := os.WriteFile(path, []byte(tt.log), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readAckLogs([]string{path})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("readAckLogs(%q) error = %v, want one saying %q", tt.log, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("readAckLogs(%q): %v", tt.log, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("readAckLogs(%q) = %v, want %v", tt.log, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("readAckLogs(%q)[%d] = %+v, want %+v", tt.log, i, got[i], tt.want[i])
				}
			}
		})
	}
}

// Batches sent across two logs must have tags apart.
func TestReadAckLogsAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("sent 1 10 5\n"), 0o600)
	os.WriteFile(b, []byte("sent 1 10 5\n"), 0o600)
	if _, err := readAckLogs([]string{a, b}); err == nil || !strings.Contains(err.Error(), "sent twice") {
		t.Errorf("readAckLogs of two logs sharing a tag: error = %v, want one saying sent twice", err)
	}
}

var classifyTests = []struct {
	name  string
	batch sentBatch
	found presence
	want  verifyResult
}{
	{"AckedPresent", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true}, presence{3, 3, 2}, verifyResult{sent: 1, acked: 1}},
	{"AckedAbsent", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true}, presence{}, verifyResult{sent: 1, acked: 1, lost: 1}},
	{"AckedPartial", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true}, presence{2, 2, 1}, verifyResult{sent: 1, acked: 1, lost: 1, partial: 1}},
	{"UnackedPresent", sentBatch{sensor: 1, tag: 10, readings: 3}, presence{3, 3, 2}, verifyResult{sent: 1, unackedPresent: 1}},
	{"UnackedAbsent", sentBatch{sensor: 1, tag: 10, readings: 3}, presence{}, verifyResult{sent: 1, unackedAbsent: 1}},
	{"UnackedPartial", sentBatch{sensor: 1, tag: 10, readings: 3}, presence{1, 1, 0}, verifyResult{sent: 1, partial: 1}},
	{"OffTheirInstant", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true}, presence{3, 2, 2}, verifyResult{sent: 1, acked: 1, lost: 1, partial: 1, stray: 1}},
	{"PastTheEnd", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true}, presence{3, 3, 3}, verifyResult{sent: 1, acked: 1, lost: 1, partial: 1, stray: 1}},
}

// After a restore to a point in time, a batch answered by then must be
// there, one sent after it must not, and one in flight at it may be
// either, but whole.
func TestClassifyUntil(t *testing.T) {
	target := time.UnixMicro(1_700_000_010_000_000)
	at := func(s float64) time.Time { return target.Add(time.Duration(s * float64(time.Second))) }
	for _, tt := range []struct {
		name  string
		batch sentBatch
		found presence
		want  verifyResult
	}{
		{"AckedBeforePresent", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true, sentAt: at(-2), ackedAt: at(-1)}, presence{3, 3, 2},
			verifyResult{sent: 1, acked: 1}},
		{"AckedBeforeAbsent", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true, sentAt: at(-2), ackedAt: at(-1)}, presence{},
			verifyResult{sent: 1, acked: 1, lost: 1}},
		{"InFlightAbsent", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true, sentAt: at(-1), ackedAt: at(1)}, presence{},
			verifyResult{sent: 1, unackedAbsent: 1}},
		{"InFlightPresent", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true, sentAt: at(-1), ackedAt: at(1)}, presence{3, 3, 2},
			verifyResult{sent: 1, unackedPresent: 1}},
		{"InFlightPartial", sentBatch{sensor: 1, tag: 10, readings: 3, sentAt: at(-1)}, presence{1, 1, 0},
			verifyResult{sent: 1, partial: 1}},
		{"SentAfterAbsent", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true, sentAt: at(1), ackedAt: at(2)}, presence{},
			verifyResult{sent: 1, unackedAbsent: 1, sentAfter: 1}},
		{"SentAfterPresent", sentBatch{sensor: 1, tag: 10, readings: 3, acked: true, sentAt: at(1), ackedAt: at(2)}, presence{3, 3, 2},
			verifyResult{sent: 1, unackedPresent: 1, sentAfter: 1, presentAfter: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			found := map[batchKey]presence{{1, 10}: tt.found}
			got := classify([]sentBatch{tt.batch}, found, target)
			if got != tt.want {
				t.Errorf("classify(%+v, %+v, target) = %+v, want %+v", tt.batch, tt.found, got, tt.want)
			}
			if wantOK := tt.want.lost+tt.want.partial+tt.want.presentAfter == 0; got.ok() != wantOK {
				t.Errorf("ok() = %v, want %v", got.ok(), wantOK)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range classifyTests {
		t.Run(tt.name, func(t *testing.T) {
			found := map[batchKey]presence{{1, 10}: tt.found}
			if got := classify([]sentBatch{tt.batch}, found, time.Time{}); got != tt.want {
				t.Errorf("classify(%+v, %+v) = %+v, want %+v", tt.batch, tt.found, got, tt.want)
			}
		})
	}
}

// Rows of a batch never sent, or on another sensor than it was sent to, are
// stray: the verifier does not pass what it cannot account for.
func TestClassifyStray(t *testing.T) {
	found := map[batchKey]presence{{1, 10}: {3, 3, 2}, {2, 10}: {3, 3, 2}, {1, 99}: {1, 1, 0}}
	got := classify([]sentBatch{{sensor: 1, tag: 10, readings: 3, acked: true}}, found, time.Time{})
	if want := (verifyResult{sent: 1, acked: 1, stray: 4}); got != want {
		t.Errorf("classify = %+v, want %+v", got, want)
	}
}

func TestPercentile(t *testing.T) {
	d := make([]time.Duration, 100)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Millisecond
	}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {90, 90 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(d, tt.p); got != tt.want {
			t.Errorf("percentile(1..100 ms, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile(nil, 50) = %v, want 0", got)
	}
}

// Killing the service looks like refused and reset connections; a slow
// service looks like a timeout, which is never excused.
func TestClassifyError(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String()
	closed.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("/hangup", func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	client := &http.Client{Timeout: 200 * time.Millisecond}
	for _, tt := range []struct{ url, want string }{
		{closedURL, errRefused},
		{srv.URL + "/hangup", errReset},
		{srv.URL + "/slow", errTimeout},
	} {
		_, err := client.Post(tt.url, "application/json", strings.NewReader("[]"))
		if err == nil {
			t.Errorf("POST %s: no error", tt.url)
			continue
		}
		if got := classifyError(err); got != tt.want {
			t.Errorf("classifyError(%v) = %s, want %s", err, got, tt.want)
		}
	}
}

// fakeService answers like the service would, with the status status(r),
// and remembers the batches it answered 200.
type fakeService struct {
	mu     sync.Mutex
	status func(*http.Request) int
	stored map[string]bool // the datetimes of the readings of 200-answered batches
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		http.Error(w, "no token", http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	status := f.status(r)
	if r.Method == http.MethodPost && status == http.StatusOK {
		var batch []struct{ Datetime string }
		if err := json.Unmarshal(body, &batch); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		for _, reading := range batch {
			f.stored[r.URL.Path+" "+reading.Datetime] = true
		}
		f.mu.Unlock()
	}
	w.WriteHeader(status)
	w.Write([]byte(`"OK"`))
}

func runFakeLoad(t *testing.T, status func(*http.Request) int, extra ...string) (*fakeService, []sentBatch, string, error) {
	t.Helper()
	f := &fakeService{status: status, stored: map[string]bool{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	dir := t.TempDir()
	tokens, acks := filepath.Join(dir, "tokens"), filepath.Join(dir, "acks")
	os.WriteFile(tokens, []byte("rdg_a\nrdg_b\n"), 0o600)
	args := append([]string{"load", "-base", srv.URL, "-tokens-file", tokens, "-org", "1", "-proj", "2",
		"-sensors", "3,4", "-rate", "200", "-duration", "300ms", "-batch", "5", "-ack-log", acks}, extra...)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr)
	batches, readErr := readAckLogs([]string{acks})
	if readErr != nil {
		t.Fatal(readErr)
	}
	return f, batches, stdout.String(), err
}

// What the ack log says was acknowledged is what the service answered 200.
func TestLoadAckLog(t *testing.T) {
	f, batches, out, err := runFakeLoad(t, func(*http.Request) int { return http.StatusOK })
	if err != nil {
		t.Fatalf("load against a healthy service: %v\n%s", err, out)
	}
	if len(batches) == 0 {
		t.Fatalf("no batch sent:\n%s", out)
	}
	for _, b := range batches {
		if !b.acked {
			t.Errorf("batch %d not acknowledged", b.tag)
		}
		for i := range b.readings {
			key := "/api/v1/org/1/proj/2/readings/" + strconv.FormatInt(b.sensor, 10) + " " + readingTime(b.tag, i).Format("2006-01-02T15:04:05.000000Z07:00")
			if !f.stored[key] {
				t.Errorf("batch %d reading %d: the service never got %s", b.tag, i, key)
			}
		}
	}
	if !strings.Contains(out, "loadgen: OK") {
		t.Errorf("report does not say OK:\n%s", out)
	}
}

var loadPolicyTests = []struct {
	name    string
	status  func(*http.Request) int
	args    []string
	wantErr string
}{
	{name: "ReadAnswers500", status: func(r *http.Request) int {
		if r.Method == http.MethodGet {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}, wantErr: "500="},
	{name: "503InPlainLoad", status: func(*http.Request) int { return http.StatusServiceUnavailable },
		args: []string{"-allow-503=false"}, wantErr: "503="},
	{name: "503InChaos", status: func(*http.Request) int { return http.StatusServiceUnavailable }},
	{name: "RateLimited", status: func(*http.Request) int { return http.StatusTooManyRequests }, args: []string{"-allow-503=false"}},
}

// 2xx and 429 always pass, 503 only where allowed, anything else fails.
func TestLoadPolicy(t *testing.T) {
	for _, tt := range loadPolicyTests {
		t.Run(tt.name, func(t *testing.T) {
			_, batches, out, err := runFakeLoad(t, tt.status, tt.args...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("load: %v\n%s", err, out)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("load error = %v, want one saying %q\n%s", err, tt.wantErr, out)
			}
			for _, b := range batches {
				if b.acked && tt.status(httptest.NewRequest(http.MethodPost, "/", nil)) != http.StatusOK {
					t.Errorf("batch %d acknowledged, but the service never answered 200", b.tag)
				}
			}
		})
	}
}

// Load goes to this machine only, over http or https.
func TestLoopbackBase(t *testing.T) {
	for base, want := range map[string]bool{
		"http://127.0.0.1:8080":             true,
		"https://127.0.0.1:8090":            true,
		"https://localhost:8090/":           true,
		"http://127.0.0.1":                  false,
		"https://example.com:443":           false,
		"https://127.0.0.1.example.com:443": false,
		"ftp://127.0.0.1:21":                false,
	} {
		if got := loopbackBase(base); got != want {
			t.Errorf("loopbackBase(%q) = %v, want %v", base, got, want)
		}
	}
}

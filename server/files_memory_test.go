package server_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// csvSource writes a CSV file of readings as it is read, never whole in
// memory: a reading a second from 2000-01-01, until size bytes.
type csvSource struct {
	size, sent int
	line       int
	pending    []byte
}

func (c *csvSource) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && c.sent < c.size {
		if len(c.pending) == 0 {
			if c.line == 0 {
				c.pending = []byte("datetime,1\n")
			} else {
				c.pending = time.Unix(946684800+int64(c.line), 0).UTC().AppendFormat(c.pending[:0], time.RFC3339)
				c.pending = append(c.pending, ",1\n"...)
			}
			if c.sent+len(c.pending) > c.size {
				c.size, c.pending = c.sent, nil // the line would not fit: end before it
				break
			}
			c.line++
		}
		m := copy(p[n:], c.pending)
		c.pending, n, c.sent = c.pending[m:], n+m, c.sent+m
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// TestFileMemoryBounded posts a file of the largest body the service
// takes, 16 MiB of short lines (some 730,000 readings), and samples the
// heap as it streams into the database: the heap must not grow with the
// file. Holding its readings, as a file's parse once did, costs about
// 100 bytes a reading: over 70 MiB. It runs alone (not parallel), with the
// GC tight, so that the samples are this request's.
func TestFileMemoryBounded(t *testing.T) {
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	defer debug.SetGCPercent(debug.SetGCPercent(25))

	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	baseline := heap()
	var (
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		for {
			peak = max(peak, heap())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	body := &csvSource{size: 16 << 20}
	res, err := c.PostReadingsWithBodyWithResponse(t.Context(), tn.orgID, tn.projectID, tn.sensorID, &client.PostReadingsParams{}, "text/csv", body)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != http.StatusOK {
		t.Fatalf("POST a 16 MiB file: %d %s", res.StatusCode(), res.Body)
	}
	answer := fileImport(t, res)
	if want := int64(body.line - 1); answer.New != want || answer.Readings != want || want < 700_000 {
		t.Fatalf("answer %+v, want %d new readings", answer, want)
	}
	growth := int64(peak) - int64(baseline)
	t.Logf("%d readings (%d bytes): heap %d MiB before, peak %d MiB", answer.Readings, body.sent, baseline>>20, peak>>20)
	if limit := int64(24 << 20); growth > limit {
		t.Errorf("the heap grew by %s MiB while the file streamed in, want at most %d MiB", strconv.FormatInt(growth>>20, 10), limit>>20)
	}
}

// TestFileAlarmsMatchBatches imports a file of 12,000 readings, which the
// store evaluates in chunks of 5,000, in order (straight into readings)
// and reversed (staged), and posts the same readings as two JSON batches
// to a twin sensor: the alarm events must be the same. Over a stored
// reading at the last instant, the file overwrites in order, a chunk at a
// time, and its events must be those of the batches over that reading:
// one late event for the four late exceedances, two in each chunk (a
// storm's events are coalesced per write, and a file is one write). The
// readings exceed an Action rule of persistence 3 across the first chunk's
// end, so a rule's streak that did not carry over would miss it.
func TestFileAlarmsMatchBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	freq := func(i int) float64 {
		if i >= 4998 && i <= 5001 {
			return 2800 // digits 7840: Alert, and Action after three
		}
		return 2000 // 4000: at rest
	}
	const n = 12_000
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	events := map[string][]string{}
	for _, how := range []string{"file", "reversed file", "json", "file over a stored reading", "json over a stored reading"} {
		a := newAlarmSite(t, e, "Alarms by "+how)
		a.rule(t, client.AlarmRuleInput{Target: "digits", Level: "Action", Direction: "above", Threshold: 7000, Persistence: ptr(3)})
		if strings.HasSuffix(how, "over a stored reading") {
			last := []client.ReadingInput{{Datetime: start.Add((n - 1) * time.Minute), Inputs: client.Values{a.freq: freq(n - 1)}}}
			if res, err := a.editor.PostReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, nil, last); err != nil || res.StatusCode() != http.StatusOK {
				t.Fatalf("POST the last reading: %v", err)
			}
		}
		if strings.HasPrefix(how, "file") || how == "reversed file" {
			var b []byte
			b = append(b, "datetime,freq\n"...)
			for k := range n {
				i := k
				if how == "reversed file" { // the first line goes straight in, the rest is staged
					i = n - 1 - k
				}
				b = start.Add(time.Duration(i)*time.Minute).AppendFormat(b, time.RFC3339)
				b = append(b, ',')
				b = strconv.AppendFloat(b, freq(i), 'f', -1, 64)
				b = append(b, '\n')
			}
			fileImport(t, postFile(t, a.editor, a.tn, a.tn.instanceID, client.PostReadingsParams{}, string(b)))
		} else {
			for half := range 2 {
				batch := make([]client.ReadingInput, 0, n/2)
				for i := half * n / 2; i < (half+1)*n/2; i++ {
					batch = append(batch, client.ReadingInput{Datetime: start.Add(time.Duration(i) * time.Minute), Inputs: client.Values{a.freq: freq(i)}})
				}
				res, err := a.editor.PostReadingsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, a.tn.instanceID, nil, batch)
				if err != nil || res.StatusCode() != http.StatusOK {
					t.Fatalf("POST batch %d: %v %s", half, err, res.Body)
				}
			}
		}
		res, err := e.client(a.tn.tokens[store.Viewer]).ListAlarmEventsWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, &client.ListAlarmEventsParams{})
		if err != nil || res.JSON200 == nil {
			t.Fatalf("list events: %v %s", err, res.Body)
		}
		for _, ev := range res.JSON200.Items {
			events[how] = append(events[how], fmt.Sprintf("%s %s at %s +%d", ev.Kind, ev.Level, deref(ev.ReadingDatetime), ev.Coalesced))
		}
	}
	want := strings.Join(events["json"], "; ")
	if !strings.Contains(want, "escalated Action at 2024-05-04T11:20:00.000Z +0") {
		t.Errorf("events of the batches\n  %s\nwant Action at the third reading over 7000 (minute 5000)", want)
	}
	for _, how := range []string{"file", "reversed file"} {
		if got := strings.Join(events[how], "; "); got != want {
			t.Errorf("events of the %s\n  %s\nwant those of the batches\n  %s", how, got, want)
		}
	}
	want = strings.Join(events["json over a stored reading"], "; ")
	if got := strings.Join(events["file over a stored reading"], "; "); got != want || want != "late Action at 2024-05-04T11:18:00.000Z +3" {
		t.Errorf("events of the file over a stored reading\n  %s\nwant those of the batches\n  %s\nwant one at minute 4998 for the exceedances of minutes 4998 to 5001", got, want)
	}
}

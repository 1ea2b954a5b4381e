package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen"
)

const hookSecret = "receiver-shared-secret"

// receiver is a webhook receiver on loopback that checks each delivery's
// signature as a receiver should, and answers status.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	status   int
	events   []gen.AlarmEvent
	problems []string
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		ts := req.Header.Get("X-Readings-Timestamp")
		mac := hmac.New(sha256.New, []byte(hookSecret))
		mac.Write([]byte(ts + "."))
		mac.Write(body)
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(req.Header.Get("X-Readings-Signature")), []byte(want)) {
			r.problems = append(r.problems, "bad signature")
		}
		if sec, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Since(time.Unix(sec, 0)) > time.Minute {
			r.problems = append(r.problems, "stale or missing timestamp "+ts)
		}
		var ev gen.AlarmEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			r.problems = append(r.problems, "body is not an AlarmEvent: "+err.Error())
		}
		if got := req.Header.Get("X-Readings-Event-Id"); got != strconv.FormatInt(ev.Id, 10) {
			r.problems = append(r.problems, "event id header "+got)
		}
		r.events = append(r.events, ev)
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) > 0 {
		t.Errorf("the receiver found: %s", strings.Join(r.problems, "; "))
	}
	var out []string
	for _, ev := range r.events {
		out = append(out, string(ev.Kind)+" "+ev.Level)
	}
	return out
}

func (a *alarmSite) webhook(t *testing.T, url string) int64 {
	t.Helper()
	res, err := a.admin.CreateWebhookWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, gen.WebhookCreate{Url: url, Secret: hookSecret})
	if err != nil || res.JSON201 == nil {
		t.Fatalf("create webhook: %v %s", err, res.Body)
	}
	return res.JSON201.Id
}

func (a *alarmSite) deliveries(t *testing.T, id int64) []gen.Delivery {
	t.Helper()
	res, err := a.admin.ListDeliveriesWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, id, &gen.ListDeliveriesParams{})
	if err != nil || res.JSON200 == nil {
		t.Fatalf("list deliveries: %v %s", err, res.Body)
	}
	return res.JSON200.Items
}

// TestWebhookDelivery: every event reaches the receiver signed, with its
// id; a dead receiver is retried with backoff, then failed, and does not
// hold up the live one.
func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.WebhookAllowPrivate, cfg.WebhookMaxAttempts = true, 2
	e := newEnvWith(t, cfg, nil)
	a := newAlarmSite(t, e, "Webhooks")
	live, dead := newReceiver(t, http.StatusNoContent), newReceiver(t, http.StatusServiceUnavailable)
	liveID, deadID := a.webhook(t, live.URL+"/hook"), a.webhook(t, dead.URL+"/hook")

	a.post(t, 0, 2500) // Alert
	a.post(t, 1, 3000) // Alarm
	if err := e.srv.DeliverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, live.got(t), "triggered Alert", "escalated Alarm")
	for _, d := range a.deliveries(t, liveID) {
		if d.Status != "delivered" || d.Attempts != 1 || deref(d.LastStatus) != 204 {
			t.Errorf("live delivery %+v, want delivered at the first attempt", d)
		}
	}
	for _, d := range a.deliveries(t, deadID) {
		if d.Status != "pending" || d.Attempts != 1 || deref(d.LastStatus) != 503 || !strings.Contains(d.LastError, "503") {
			t.Errorf("dead delivery %+v, want pending after one attempt that got 503", d)
		}
		if next := at(t, d.NextAttemptAt); time.Until(next) < 20*time.Second {
			t.Errorf("next attempt at %v, want about 30 s on", next)
		}
	}
	// Due again now: the second attempt is the last.
	if _, err := e.pool.Exec(t.Context(), `UPDATE webhook_deliveries SET next_at = now() WHERE webhook_id = $1`, deadID); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.DeliverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, d := range a.deliveries(t, deadID) {
		if d.Status != "failed" || d.Attempts != 2 {
			t.Errorf("dead delivery %+v, want failed after 2 attempts", d)
		}
	}
	if got := len(dead.got(t)); got != 4 {
		t.Errorf("the dead receiver got %d posts, want 4 (2 events, 2 attempts)", got)
	}

	t.Run("Test", func(t *testing.T) {
		res, err := a.admin.TestWebhookWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, liveID)
		if err != nil || res.JSON200 == nil || !res.JSON200.Delivered || deref(res.JSON200.Status) != 204 {
			t.Fatalf("test delivery: %v %s", err, res.Body)
		}
	})
}

// TestWebhookDeliveredAtOnce: the events a batch raises are delivered as
// soon as it commits, not at the delivery loop's next poll (an hour here).
func TestWebhookDeliveredAtOnce(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.WebhookAllowPrivate = true
	e := newEnvWith(t, cfg, nil)
	a := newAlarmSite(t, e, "AtOnce")
	live := newReceiver(t, http.StatusNoContent)
	a.webhook(t, live.URL+"/hook")
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		e.srv.DeliverWebhooks(ctx, time.Hour)
		close(done)
	}()
	t.Cleanup(func() { stop(); <-done })

	// The first event may go out with the loop's first look; the second
	// comes when the loop waits for its next.
	for i, want := range []string{"triggered Alert", "escalated Alarm"} {
		a.post(t, i, []float64{2500, 3000}[i])
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			got := live.got(t)
			if len(got) == i+1 && got[i] == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the receiver got %q 10 s after the POST, want %q last", got, want)
			}
		}
	}
}

// TestWebhookRefusesPrivateTargets: by default a webhook on loopback is
// refused when delivering, and the log says why.
func TestWebhookRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := newAlarmSite(t, e, "SSRF")
	r := newReceiver(t, http.StatusNoContent)
	id := a.webhook(t, r.URL+"/hook")
	a.post(t, 0, 2500)
	if err := e.srv.DeliverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := r.got(t); len(got) != 0 {
		t.Errorf("the loopback receiver got %v, want nothing", got)
	}
	d := a.deliveries(t, id)
	if len(d) != 1 || d[0].Status != "pending" || !strings.Contains(d[0].LastError, "refused") {
		t.Errorf("deliveries %+v, want one pending, refused", d)
	}
	res, err := a.admin.TestWebhookWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, id)
	if err != nil || res.JSON200 == nil || res.JSON200.Delivered || !strings.Contains(deref(res.JSON200.Error), "refused") {
		t.Errorf("test delivery: %v %s, want refused", err, res.Body)
	}
	for _, url := range []string{"ftp://example.com/hook", "javascript:alert(1)", "http://user:pw@example.com/", "example.com/hook"} {
		res, err := a.admin.CreateWebhookWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, gen.WebhookCreate{Url: url, Secret: hookSecret})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, 400, "invalid")
	}
}

package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/outbox"
	"github.com/sensorreadings/readings/store"
)

const hookSecret = "receiver-shared-secret"

// receiver is a webhook receiver on loopback that checks each delivery's
// signature as a receiver should, and answers status.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	status   int
	events   []client.AlarmEvent
	arrived  []time.Time // of each event
	problems []string
}

func newReceiver(t *testing.T, status int) *receiver {
	return newSlowReceiver(t, status, 0)
}

// newSlowReceiver is a receiver that takes delay to answer.
func newSlowReceiver(t *testing.T, status int, delay time.Duration) *receiver {
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		time.Sleep(delay)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.arrived = append(r.arrived, time.Now())
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
		var ev client.AlarmEvent
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

// count is how many events the receiver got.
func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
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
	res, err := a.admin.CreateWebhookWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, client.WebhookCreate{Url: url, Secret: hookSecret})
	if err != nil || res.JSON201 == nil {
		t.Fatalf("create webhook: %v %s", err, res.Body)
	}
	return res.JSON201.Id
}

func (a *alarmSite) deliveries(t *testing.T, id int64) []client.Delivery {
	t.Helper()
	res, err := a.admin.ListDeliveriesWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, id, &client.ListDeliveriesParams{})
	if err != nil || res.JSON200 == nil {
		t.Fatalf("list deliveries: %v %s", err, res.Body)
	}
	return res.JSON200.Items
}

// deliverInBackground runs ob's delivery loop until the test ends.
func deliverInBackground(t *testing.T, ob *outbox.Outbox, poll time.Duration) {
	ctx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() {
		ob.Run(ctx, poll)
		close(done)
	}()
	t.Cleanup(func() { stop(); <-done })
}

// TestWebhookDelivery: every event reaches the receiver signed, with its
// id; a dead receiver is retried with backoff, then failed, and does not
// hold up the live one.
func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.outbox.AllowPrivate, cfg.outbox.MaxAttempts = true, 2
	e := newEnvWith(t, cfg, faults{})
	a := newAlarmSite(t, e, "Webhooks")
	live, dead := newReceiver(t, http.StatusNoContent), newReceiver(t, http.StatusServiceUnavailable)
	liveID, deadID := a.webhook(t, live.URL+"/hook"), a.webhook(t, dead.URL+"/hook")

	a.post(t, 0, 2500) // Alert
	a.post(t, 1, 3000) // Alarm
	if err := e.outbox.DeliverOnce(t.Context()); err != nil {
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
	if err := e.outbox.DeliverOnce(t.Context()); err != nil {
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
	cfg.outbox.AllowPrivate = true
	e := newEnvWith(t, cfg, faults{})
	a := newAlarmSite(t, e, "AtOnce")
	live := newReceiver(t, http.StatusNoContent)
	a.webhook(t, live.URL+"/hook")
	deliverInBackground(t, e.outbox, time.Hour)

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
	if err := e.outbox.DeliverOnce(t.Context()); err != nil {
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
		res, err := a.admin.CreateWebhookWithResponse(t.Context(), a.tn.orgID, a.tn.projectID, client.WebhookCreate{Url: url, Secret: hookSecret})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, 400, "invalid")
	}
}

// TestWebhookFairness: an organization's storm leaves a backlog of
// deliveries to five slow webhooks; while it drains, every event of
// another organization reaches its receiver within 2 s. (Before, a claim
// took the 100 oldest due deliveries of any webhook, so the other
// organization's waited behind the whole backlog.)
func TestWebhookFairness(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.outbox.AllowPrivate = true
	cfg.outbox.Concurrency = 4 // an organization's share: one
	e := newEnvWith(t, cfg, faults{})
	stormy, calm := newAlarmSite(t, e, "Stormy"), newAlarmSite(t, e, "Calm")
	slow := newSlowReceiver(t, http.StatusNoContent, 20*time.Millisecond)
	var stormHooks []int64
	for range 5 {
		stormHooks = append(stormHooks, stormy.webhook(t, slow.URL+"/hook"))
	}
	fast := newReceiver(t, http.StatusNoContent)
	calm.webhook(t, fast.URL+"/hook")

	deliverInBackground(t, e.outbox, time.Second)

	// 10,000 readings alternating across Alarm, in a hundred POSTs: three
	// events each, at least a second's worth of deliveries each.
	for batch := range slices.Chunk(stormy.storm(10000), 100) {
		res, err := stormy.editor.PostReadingsWithResponse(t.Context(), stormy.tn.orgID, stormy.tn.projectID, stormy.tn.instanceID, nil, batch)
		if err != nil || res.StatusCode() != http.StatusOK {
			t.Fatalf("POST a hundredth of the storm: %v %s", err, res.Body)
		}
	}

	var took []time.Duration
	for i := range 20 {
		raised := time.Now()
		calm.post(t, i, []float64{2500, 2000}[i%2]) // triggered Alert, cleared Alert, …
		for deadline := raised.Add(20 * time.Second); fast.count() <= i; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("event %d of the calm organization not delivered 20 s after its POST", i+1)
			}
		}
		fast.mu.Lock()
		took = append(took, fast.arrived[i].Sub(raised))
		fast.mu.Unlock()
	}
	var pending int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_deliveries WHERE webhook_id = ANY($1) AND status = 'pending'`, stormHooks).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending == 0 {
		t.Errorf("the storm's backlog had drained before the calm organization's last event: the test shows nothing")
	}
	slices.Sort(took)
	if p99 := took[len(took)-1]; p99 > 2*time.Second { // nearest rank: the 20th of 20
		t.Errorf("the calm organization's events took %v from POST to receiver (p99 %v), want within 2 s, with %d of the storm's deliveries pending", took, p99, pending)
	}
	t.Logf("calm organization: median %v, p99 %v; storm deliveries pending at the end: %d", took[len(took)/2], took[len(took)-1], pending)
}

// TestWebhookLeaseTwoReplicas: two replicas deliver from one database.
// To a receiver that never answers, each attempt gives up at the webhook
// timeout, before its claim's lease ends, so no event is sent twice while
// the other replica waits for the lease (before, a claim of up to 100
// deliveries sent one after another outlived its lease, and the other
// replica sent the rest again). To a receiver of many events, one delivery
// is in flight at a time on both replicas together, in order (before, each
// replica took a share and sent it at once).
//
// The webhook timeout is 5 s, not the 1 s minimum: an attempt's time runs
// from before its claim, so that it ends before the lease does, and on a
// loaded machine the claim's round trips and the scheduler took a whole
// second before some requests left; with one attempt allowed, those events
// never arrived.
func TestWebhookLeaseTwoReplicas(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.outbox.AllowPrivate = true
	cfg.outbox.Timeout = 5 * time.Second
	cfg.outbox.Lease = cfg.outbox.Timeout + outbox.LeaseMargin
	cfg.outbox.MaxAttempts = 1 // no retry: a second send is a double
	e := newEnvWith(t, cfg, faults{})
	otherDB := store.New(e.pool)
	other := newService(t, otherDB, slog.New(slog.DiscardHandler), cfg, faults{}).outbox

	var (
		mu       sync.Mutex
		sent     = map[string]int{} // to the hung receiver, by event id
		lastSent time.Time
		hangs    = make(chan struct{})
	)
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		sent[req.Header.Get("X-Readings-Event-Id")]++
		lastSent = time.Now()
		mu.Unlock()
		<-hangs // past every lease
	}))
	t.Cleanup(func() { close(hangs); hung.Close() })
	var (
		inFlight, most int
		order          []int64 // event ids, as the busy receiver got them
	)
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id, _ := strconv.ParseInt(req.Header.Get("X-Readings-Event-Id"), 10, 64)
		mu.Lock()
		order = append(order, id)
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		inFlight-- // before the answer, so the sender sees it done after
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(busy.Close)

	const hungEvents, busyEvents = 4, 150
	h, b := newAlarmSite(t, e, "Hung"), newAlarmSite(t, e, "Busy")
	hungID := h.webhook(t, hung.URL+"/hook")
	busyID := b.webhook(t, busy.URL+"/hook")
	for m := range hungEvents {
		h.post(t, m, []float64{2500, 2000}[m%2])
	}
	for m := range busyEvents {
		b.post(t, m, []float64{2500, 2000}[m%2])
	}

	for _, ob := range []*outbox.Outbox{e.outbox, other} {
		deliverInBackground(t, ob, 50*time.Millisecond)
	}

	// Wait for every event, and past the lease of the last attempt.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n, last, got := len(sent), lastSent, len(order)
		mu.Unlock()
		if n == hungEvents && got >= busyEvents && time.Since(last) > cfg.outbox.Lease+time.Second {
			break
		}
		if time.Now().After(deadline) {
			var undelivered string
			if err := e.pool.QueryRow(t.Context(), `SELECT coalesce(string_agg(format('event %s %s after %s attempts: %s', event_id, status, attempts, last_error), '; ' ORDER BY id), 'none')
FROM webhook_deliveries WHERE webhook_id = $1 AND status <> 'delivered'`, busyID).Scan(&undelivered); err != nil {
				t.Fatal(err)
			}
			t.Errorf("2 min on: %d of %d events sent to the hung receiver, the last %v ago; %d of %d to the busy one (undelivered: %s)", n, hungEvents, time.Since(last), got, busyEvents, undelivered)
			break
		}
	}
	mu.Lock()
	for id, n := range sent {
		if n != 1 {
			t.Errorf("event %s sent %d times to the hung receiver, want once", id, n)
		}
	}
	if most != 1 || len(order) != busyEvents || !slices.IsSorted(order) {
		t.Errorf("the busy receiver had up to %d deliveries in flight at once and got %d events, in order: %v; want one at a time, %d, in order",
			most, len(order), slices.IsSorted(order), busyEvents)
	}
	mu.Unlock()
	for _, d := range h.deliveries(t, hungID) {
		if d.Status != "failed" || d.Attempts != 1 || d.LastError == "" {
			t.Errorf("delivery %+v, want failed after one attempt that gave up", d)
		}
	}
}

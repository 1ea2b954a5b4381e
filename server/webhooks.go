package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"code.dny.dev/ssrf"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// The retry schedule of deliveries: 30 s after the first failure,
// doubling, at most an hour apart.
const (
	firstRetry = 30 * time.Second
	maxRetry   = time.Hour
)

// WebhookLeaseMargin is what a claim's lease keeps past the attempt's
// timeout, to record the outcome: an attempt never outlives its lease, so
// no other replica sends the delivery while it is in flight.
const WebhookLeaseMargin = 5 * time.Second

// retryAfter is the wait after the attempts-th failed attempt.
func retryAfter(attempts int) time.Duration {
	d := firstRetry
	for i := 1; i < attempts && d < maxRetry; i++ {
		d *= 2
	}
	return min(d, maxRetry)
}

// webhookClient posts to receivers through webhookDialer; it never follows
// redirects, which could lead where the dialer would not go.
func webhookClient(timeout time.Duration, allowPrivate bool) *http.Client {
	return &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{DialContext: webhookDialer(timeout, allowPrivate).DialContext, Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// webhookDialer connects to receivers. Unless private targets are allowed,
// it refuses every address of IANA's special-purpose registries, on any
// port (code.dny.dev/ssrf): loopback, private, shared (carrier-grade NAT,
// home of cloud metadata addresses), link-local, benchmarking,
// documentation, NAT64 and 6to4 (which map IPv4 addresses, loopback
// included), multicast and reserved, and any IPv6 address outside global
// unicast. It decides after resolving the name, so a name that resolves to
// such an address is refused too, and before connecting, so no packet
// leaves for a refused address.
func webhookDialer(timeout time.Duration, allowPrivate bool) *net.Dialer {
	dialer := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		guard := ssrf.New(ssrf.WithAnyPort())
		dialer.Control = func(network, address string, c syscall.RawConn) error {
			if err := guard.Safe(network, address, c); err != nil {
				return fmt.Errorf("webhook target refused (see -webhook-allow-private): %w", err)
			}
			return nil
		}
	}
	return dialer
}

// sign is the signature header's value: HMAC-SHA256 of "timestamp.body".
func sign(secret string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", timestamp)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// post sends event to a receiver, signed; it returns the receiver's status,
// if it answered, and an error unless it answered 2xx.
func (s *Server) post(ctx context.Context, rawURL, secret string, event gen.AlarmEvent) (*int, error) {
	body, err := json.Marshal(event)
	if err != nil {
		return nil, err
	}
	now := time.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "readings-webhook")
	req.Header.Set("X-Readings-Event-Id", strconv.FormatInt(event.Id, 10))
	req.Header.Set("X-Readings-Timestamp", strconv.FormatInt(now, 10))
	req.Header.Set("X-Readings-Signature", sign(secret, now, body))
	res, err := s.webhooks.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	status := res.StatusCode
	if status < 200 || status > 299 {
		return &status, fmt.Errorf("the receiver answered %d", status)
	}
	return &status, nil
}

// DeliverWebhooks delivers due webhook deliveries until ctx ends, looking
// every poll, at once when a batch of readings through this replica has
// raised events (deliverSoon), and whenever an attempt ends and frees its
// slot. Each delivery is sent in its own goroutine as soon as it is
// claimed; ClaimDeliveries shares the free slots fairly. Attempts in
// flight when ctx ends finish first (within the webhook timeout).
func (s *Server) DeliverWebhooks(ctx context.Context, poll time.Duration) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := newSlots()
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		if _, err := s.dispatch(ctx, &wg, slots); err != nil && ctx.Err() == nil {
			s.log.Warn("claim webhook deliveries", "err", err)
		}
		select {
		case <-ticker.C:
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}

// deliverSoon wakes DeliverWebhooks when a batch has raised events: their
// deliveries are committed, and need not wait for the next poll. Events of
// other replicas, and of edits and overdue checks, wait for it.
func (s *Server) deliverSoon(w store.Written) {
	if w.Events == 0 {
		return
	}
	s.wakeDeliveries()
}

func (s *Server) wakeDeliveries() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// DeliverOnce delivers what is due, claim after claim, until a claim
// finds nothing: DeliverWebhooks' work, for tests and tools. A delivery
// that fails is due again after its retry, not before DeliverOnce returns.
func (s *Server) DeliverOnce(ctx context.Context) error {
	slots := newSlots()
	for {
		var wg sync.WaitGroup
		n, err := s.dispatch(ctx, &wg, slots)
		wg.Wait()
		if err != nil || n == 0 {
			return err
		}
	}
}

// slots counts one replica's deliveries in flight, in total and by
// organization.
type slots struct {
	mu    sync.Mutex
	total int
	orgs  map[int64]int
}

func newSlots() *slots { return &slots{orgs: map[int64]int{}} }

// query is the claim that fills the free slots.
func (sl *slots) query(cfg Config) store.ClaimQuery {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return store.ClaimQuery{
		Max: cfg.WebhookConcurrency - sl.total, PerWebhook: cfg.WebhookConcurrencyPerWebhook,
		PerOrg: cfg.webhookConcurrencyPerOrg(), InFlight: maps.Clone(sl.orgs), Lease: cfg.WebhookLease,
	}
}

func (sl *slots) take(org int64) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.total++
	sl.orgs[org]++
}

func (sl *slots) free(org int64) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.total--
	if sl.orgs[org]--; sl.orgs[org] == 0 {
		delete(sl.orgs, org)
	}
}

// dispatch claims due deliveries while slots are free and claims find
// some, and starts each in a goroutine of wg, which frees its slot and
// wakes DeliverWebhooks when it ends. It returns how many it started.
func (s *Server) dispatch(ctx context.Context, wg *sync.WaitGroup, sl *slots) (int, error) {
	started := 0
	for {
		q := sl.query(s.cfg)
		if q.Max <= 0 {
			return started, nil
		}
		claimed := time.Now() // before the lease starts, so the attempt ends before it does
		claims, err := s.store.ClaimDeliveries(ctx, q)
		if err != nil || len(claims) == 0 {
			return started, err
		}
		for _, c := range claims {
			sl.take(c.OrgID)
			wg.Go(func() {
				s.attempt(context.WithoutCancel(ctx), c, claimed)
				sl.free(c.OrgID)
				s.wakeDeliveries()
			})
		}
		started += len(claims)
	}
}

// attempt sends a claimed delivery and records how it went. It gives up
// WebhookLeaseMargin before the lease ends, whatever held it up, so that
// the delivery is never sent by two workers at once. A delivery that fails
// waits for its retry; the webhook's others are tried anyway, since each
// event stands alone.
func (s *Server) attempt(ctx context.Context, c store.Claim, claimed time.Time) {
	sendCtx, cancel := context.WithDeadline(ctx, claimed.Add(s.cfg.WebhookLease-WebhookLeaseMargin))
	status, err := s.post(sendCtx, c.URL, c.Secret, toAlarmEvent(c.Event))
	cancel()
	outcome, lastError, next := "delivered", "", time.Now()
	if err != nil {
		lastError = err.Error()
		outcome, next = "pending", time.Now().Add(retryAfter(c.Attempts))
		if c.Attempts >= s.cfg.WebhookMaxAttempts {
			outcome = "failed"
		}
		s.log.Warn("webhook delivery", "webhook_id", c.WebhookID, "event_id", c.EventID, "attempt", c.Attempts, "outcome", outcome, "err", err)
	}
	if err := s.store.FinishDelivery(ctx, c.ID, c.Attempts, outcome, status, lastError, next); err != nil {
		// Unrecorded, the attempt is made again when the lease runs out.
		s.log.Warn("record webhook delivery", "delivery_id", c.ID, "attempt", c.Attempts, "err", err)
	}
}

// ListWebhooks returns a page of the project's webhooks.
func (s *Server) ListWebhooks(ctx context.Context, req gen.ListWebhooksRequestObject) (gen.ListWebhooksResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	hooks, more, err := s.store.ListWebhooks(ctx, req.OrgId, req.ProjId, after, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListWebhooks200JSONResponse{Items: mapSlice(hooks, toWebhook)}
	if len(hooks) > 0 {
		out.NextCursor = nextCursor(more, hooks[len(hooks)-1].ID)
	}
	return out, nil
}

// CreateWebhook adds a webhook to the project.
func (s *Server) CreateWebhook(ctx context.Context, req gen.CreateWebhookRequestObject) (gen.CreateWebhookResponseObject, error) {
	u, err := url.Parse(req.Body.Url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("url %q must be an http or https URL with a host and no credentials", req.Body.Url),
			Details: map[string]any{"field": "url"}}
	}
	hook, err := s.store.CreateWebhook(ctx, req.OrgId, req.ProjId, u.String(), req.Body.Secret)
	if err != nil {
		return nil, err
	}
	return gen.CreateWebhook201JSONResponse(toWebhook(hook)), nil
}

// DeleteWebhook deletes a webhook.
func (s *Server) DeleteWebhook(ctx context.Context, req gen.DeleteWebhookRequestObject) (gen.DeleteWebhookResponseObject, error) {
	if err := s.store.DeleteWebhook(ctx, req.OrgId, req.ProjId, req.WebhookId); err != nil {
		return nil, err
	}
	return gen.DeleteWebhook204Response{}, nil
}

// TestWebhook sends a signed test event to a webhook now.
func (s *Server) TestWebhook(ctx context.Context, req gen.TestWebhookRequestObject) (gen.TestWebhookResponseObject, error) {
	hook, err := s.store.GetWebhook(ctx, req.OrgId, req.ProjId, req.WebhookId)
	if err != nil {
		return nil, err
	}
	// A test is a write like any under the project: refused while it is
	// archived.
	if p, err := s.store.GetProject(ctx, req.OrgId, req.ProjId); err != nil {
		return nil, err
	} else if p.State == store.Archived {
		return nil, apperr.Errorf(apperr.Conflict, "project %d is archived, so read-only; restore it first", p.ID)
	}
	event := gen.AlarmEvent{Kind: "test", Target: "", Level: "", CreatedAt: toDatetime(time.Now())}
	status, err := s.post(ctx, hook.URL, hook.Secret, event)
	out := gen.TestWebhook200JSONResponse{Delivered: err == nil, Status: status}
	if err != nil {
		msg := err.Error()
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			msg = urlErr.Err.Error()
		}
		out.Error = &msg
	}
	return out, nil
}

// ListDeliveries returns a page of a webhook's delivery log.
func (s *Server) ListDeliveries(ctx context.Context, req gen.ListDeliveriesRequestObject) (gen.ListDeliveriesResponseObject, error) {
	before, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	list, more, err := s.store.ListDeliveries(ctx, req.OrgId, req.ProjId, req.WebhookId, before, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListDeliveries200JSONResponse{Items: mapSlice(list, toDelivery)}
	if len(list) > 0 {
		out.NextCursor = nextCursor(more, list[len(list)-1].ID)
	}
	return out, nil
}

func toWebhook(w store.Webhook) gen.Webhook {
	return gen.Webhook{Id: w.ID, Url: w.URL, CreatedAt: toDatetime(w.CreatedAt)}
}

func toDelivery(d store.Delivery) gen.Delivery {
	return gen.Delivery{
		Id: d.ID, EventId: d.EventID, Status: gen.DeliveryStatus(d.Status), Attempts: d.Attempts, LastStatus: d.LastStatus,
		LastError: d.LastError, NextAttemptAt: toDatetime(d.NextAt), DeliveredAt: optionalDatetime(d.DeliveredAt), CreatedAt: toDatetime(d.CreatedAt),
	}
}

// webhookConcurrencyPerOrg is the deliveries one organization's webhooks
// may have in flight on a replica: a quarter of them, so that however many
// webhooks one organization has, and however slow their receivers, the
// others always find free slots.
func (c Config) webhookConcurrencyPerOrg() int { return max(1, c.WebhookConcurrency/4) }

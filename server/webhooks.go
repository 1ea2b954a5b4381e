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
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// The retry schedule of deliveries: 30 s after the first failure,
// doubling, at most an hour apart; and how long a claim holds a delivery
// against other workers (past the timeout, so an attempt in flight is
// never sent twice by a live worker).
const (
	firstRetry = 30 * time.Second
	maxRetry   = time.Hour
	claimBatch = 100
)

// retryAfter is the wait after the attempts-th failed attempt.
func retryAfter(attempts int) time.Duration {
	d := firstRetry
	for i := 1; i < attempts && d < maxRetry; i++ {
		d *= 2
	}
	return min(d, maxRetry)
}

// webhookClient posts to receivers. Unless private targets are allowed, it
// refuses, when it connects (after resolving the name, so a name that
// resolves to one is refused too), loopback, private, link-local and
// unspecified addresses; it never follows redirects, which could lead
// there.
func webhookClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("webhook target %s: %w", address, err)
			}
			if ip := ap.Addr().Unmap(); ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() {
				return fmt.Errorf("webhook target %s is a loopback, private or link-local address, refused (see -webhook-allow-private)", ip)
			}
			return nil
		}
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{DialContext: dialer.DialContext, Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
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
// every poll, and at once when a batch of readings through this replica
// has raised events (deliverSoon). Each webhook's deliveries go in their
// own goroutine, one at a time and in event order, so a slow receiver
// holds up only itself.
func (s *Server) DeliverWebhooks(ctx context.Context, poll time.Duration) {
	var (
		mu   sync.Mutex
		busy = map[int64]bool{}
		wg   sync.WaitGroup
	)
	defer wg.Wait()
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		mu.Lock()
		ids := make([]int64, 0, len(busy))
		for id := range busy {
			ids = append(ids, id)
		}
		mu.Unlock()
		claims, err := s.store.ClaimDeliveries(ctx, ids, claimBatch, s.cfg.WebhookTimeout+time.Minute)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("claim webhook deliveries", "err", err)
		}
		for _, batch := range byWebhook(claims) {
			mu.Lock()
			busy[batch[0].WebhookID] = true
			mu.Unlock()
			wg.Go(func() {
				s.deliver(context.WithoutCancel(ctx), batch)
				mu.Lock()
				delete(busy, batch[0].WebhookID)
				mu.Unlock()
			})
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
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// DeliverOnce claims the due deliveries and delivers them before it
// returns: DeliverWebhooks' work, once, for tests and tools.
func (s *Server) DeliverOnce(ctx context.Context) error {
	claims, err := s.store.ClaimDeliveries(ctx, nil, claimBatch, s.cfg.WebhookTimeout+time.Minute)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, batch := range byWebhook(claims) {
		wg.Go(func() { s.deliver(ctx, batch) })
	}
	wg.Wait()
	return nil
}

// byWebhook splits claims, ordered by webhook, into each webhook's.
func byWebhook(claims []store.Claim) [][]store.Claim {
	var out [][]store.Claim
	for i, c := range claims {
		if i == 0 || c.WebhookID != claims[i-1].WebhookID {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], c)
	}
	return out
}

// deliver sends one webhook's claimed deliveries in order and records
// each attempt. A delivery that fails waits for its retry; the ones after
// it are tried anyway, since each event stands alone.
func (s *Server) deliver(ctx context.Context, claims []store.Claim) {
	for _, c := range claims {
		status, err := s.post(ctx, c.URL, c.Secret, toAlarmEvent(c.Event))
		outcome, lastError, next := "delivered", "", time.Now()
		if err != nil {
			lastError = err.Error()
			outcome, next = "pending", time.Now().Add(retryAfter(c.Attempts))
			if c.Attempts >= s.cfg.WebhookMaxAttempts {
				outcome = "failed"
			}
			s.log.Warn("webhook delivery", "webhook_id", c.WebhookID, "event_id", c.EventID, "attempt", c.Attempts, "outcome", outcome, "err", err)
		}
		if err := s.store.FinishDelivery(ctx, c.ID, outcome, status, lastError, next); err != nil {
			// The claim's lease runs out and the delivery is tried again.
			s.log.Warn("record webhook delivery", "delivery_id", c.ID, "err", err)
		}
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
	event := gen.AlarmEvent{Kind: "test", Target: "", Level: "", CreatedAt: datetime(time.Now())}
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
	return gen.Webhook{Id: w.ID, Url: w.URL, CreatedAt: datetime(w.CreatedAt)}
}

func toDelivery(d store.Delivery) gen.Delivery {
	return gen.Delivery{
		Id: d.ID, EventId: d.EventID, Status: gen.DeliveryStatus(d.Status), Attempts: d.Attempts, LastStatus: d.LastStatus,
		LastError: d.LastError, NextAttemptAt: datetime(d.NextAt), DeliveredAt: optionalDatetime(d.DeliveredAt), CreatedAt: datetime(d.CreatedAt),
	}
}

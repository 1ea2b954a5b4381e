// Package outbox delivers the alarm events to the project's webhooks: the
// deliveries the store queues with every event, claimed fairly among
// organizations and webhooks, each under a lease that no other replica
// sends it within, retried on a schedule, signed. It is a worker that main
// starts and stops; the domain wakes it when a write of readings raised
// events.
package outbox

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"code.dny.dev/ssrf"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// Config holds what a deployment may change of webhook delivery; zero
// fields take the defaults New says.
type Config struct {
	// Timeout bounds an attempt to deliver; 10 s by default.
	Timeout time.Duration
	// MaxAttempts bounds the attempts before a delivery is failed; 8 by
	// default.
	MaxAttempts int
	// Lease is how long a claimed delivery is its replica's: at least
	// Timeout + LeaseMargin; Timeout and a minute by default.
	Lease time.Duration
	// Concurrency bounds the deliveries this replica sends at once, an
	// organization's webhooks a quarter of them (32 by default); and
	// ConcurrencyPerWebhook those of one webhook, on all replicas together
	// (1 by default).
	Concurrency, ConcurrencyPerWebhook int
	// AllowPrivate lets webhooks reach loopback, private and every other
	// special-purpose address: for tests and receivers on premises.
	AllowPrivate bool
}

// The retry schedule of deliveries: 30 s after the first failure,
// doubling, at most an hour apart.
const (
	firstRetry = 30 * time.Second
	maxRetry   = time.Hour
)

// LeaseMargin is what a claim's lease keeps past the attempt's timeout, to
// record the outcome: an attempt never outlives its lease, so no other
// replica sends the delivery while it is in flight.
const LeaseMargin = 5 * time.Second

// Store is what delivery needs of the database: the deliveries, and for a
// test the webhook and its project.
type Store interface {
	ClaimDeliveries(ctx context.Context, q store.ClaimQuery) ([]store.Claim, error)
	FinishDelivery(ctx context.Context, id int64, attempt int, status string, httpStatus *int, lastError string, next time.Time) error
	GetWebhook(ctx context.Context, orgID, projectID, webhookID int64) (store.Webhook, error)
	GetProject(ctx context.Context, orgID, projectID int64) (store.Project, error)
}

// Payload encodes an event as a webhook receives it: the API's AlarmEvent,
// which the server owns.
type Payload func(store.AlarmEvent) ([]byte, error)

// Outbox delivers the queued deliveries.
type Outbox struct {
	st      Store
	log     *slog.Logger
	cfg     Config
	payload Payload
	client  *http.Client
	// wake has Run look for due deliveries before its next poll; it holds
	// one wake-up at most.
	wake chan struct{}
}

// New returns the outbox of st, whose events payload encodes. It fails
// when the lease is shorter than the timeout and LeaseMargin.
func New(st Store, log *slog.Logger, cfg Config, payload Payload) (*Outbox, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.Lease <= 0 {
		cfg.Lease = cfg.Timeout + time.Minute
	}
	if cfg.Lease < cfg.Timeout+LeaseMargin {
		return nil, fmt.Errorf("webhook lease %v must be at least the webhook timeout %v and %v more", cfg.Lease, cfg.Timeout, LeaseMargin)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 32
	}
	if cfg.ConcurrencyPerWebhook <= 0 {
		cfg.ConcurrencyPerWebhook = 1
	}
	return &Outbox{st: st, log: log, cfg: cfg, payload: payload, client: newClient(cfg.Timeout, cfg.AllowPrivate), wake: make(chan struct{}, 1)}, nil
}

// retryAfter is the wait after the attempts-th failed attempt.
func retryAfter(attempts int) time.Duration {
	d := firstRetry
	for i := 1; i < attempts && d < maxRetry; i++ {
		d *= 2
	}
	return min(d, maxRetry)
}

// newClient posts to receivers through newDialer's; it never follows
// redirects, which could lead where the dialer would not go.
func newClient(timeout time.Duration, allowPrivate bool) *http.Client {
	return &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{DialContext: newDialer(timeout, allowPrivate).DialContext, Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// newDialer connects to receivers. Unless private targets are allowed, it
// refuses every address of IANA's special-purpose registries, on any port
// (code.dny.dev/ssrf): loopback, private, shared (carrier-grade NAT, home
// of cloud metadata addresses), link-local, benchmarking, documentation,
// NAT64 and 6to4 (which map IPv4 addresses, loopback included), multicast
// and reserved, and any IPv6 address outside global unicast. It decides
// after resolving the name, so a name that resolves to such an address is
// refused too, and before connecting, so no packet leaves for a refused
// address.
func newDialer(timeout time.Duration, allowPrivate bool) *net.Dialer {
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

// Post sends body, the payload of event eventID (0 for a test), to a
// receiver, signed; it returns the receiver's status, if it answered, and
// an error unless it answered 2xx.
func (o *Outbox) Post(ctx context.Context, rawURL, secret string, eventID int64, body []byte) (*int, error) {
	now := time.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "readings-webhook")
	req.Header.Set("X-Readings-Event-Id", strconv.FormatInt(eventID, 10))
	req.Header.Set("X-Readings-Timestamp", strconv.FormatInt(now, 10))
	req.Header.Set("X-Readings-Signature", sign(secret, now, body))
	res, err := o.client.Do(req)
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

// Run delivers due deliveries until ctx ends, looking every poll, at once
// when Wake says a write through this replica has raised events, and
// whenever an attempt ends and frees its slot. Each delivery is sent in
// its own goroutine as soon as it is claimed; ClaimDeliveries shares the
// free slots fairly. Attempts in flight when ctx ends finish first (within
// the webhook timeout).
func (o *Outbox) Run(ctx context.Context, poll time.Duration) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := newSlots()
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		if _, err := o.dispatch(ctx, &wg, slots); err != nil && ctx.Err() == nil {
			o.log.Warn("claim webhook deliveries", "err", err)
		}
		select {
		case <-ticker.C:
		case <-o.wake:
		case <-ctx.Done():
			return
		}
	}
}

// Wake has Run look for due deliveries now, not at its next poll: the
// deliveries of events just committed. Events of other replicas, and of
// edits and overdue checks, wait for the poll.
func (o *Outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// DeliverOnce delivers what is due, claim after claim, until a claim
// finds nothing: Run's work, for tests and tools. A delivery that fails is
// due again after its retry, not before DeliverOnce returns.
func (o *Outbox) DeliverOnce(ctx context.Context) error {
	slots := newSlots()
	for {
		var wg sync.WaitGroup
		n, err := o.dispatch(ctx, &wg, slots)
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
		Max: cfg.Concurrency - sl.total, PerWebhook: cfg.ConcurrencyPerWebhook,
		PerOrg: perOrg(cfg.Concurrency), InFlight: maps.Clone(sl.orgs), Lease: cfg.Lease,
	}
}

// perOrg is the deliveries one organization's webhooks may have in flight
// on a replica of concurrency: a quarter of them, so that however many
// webhooks one organization has, and however slow their receivers, the
// others always find free slots.
func perOrg(concurrency int) int { return max(1, concurrency/4) }

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
// wakes Run when it ends. It returns how many it started.
func (o *Outbox) dispatch(ctx context.Context, wg *sync.WaitGroup, sl *slots) (int, error) {
	started := 0
	for {
		q := sl.query(o.cfg)
		if q.Max <= 0 {
			return started, nil
		}
		claimed := time.Now() // before the lease starts, so the attempt ends before it does
		claims, err := o.st.ClaimDeliveries(ctx, q)
		if err != nil || len(claims) == 0 {
			return started, err
		}
		for _, c := range claims {
			sl.take(c.OrgID)
			wg.Go(func() {
				o.attempt(context.WithoutCancel(ctx), c, claimed)
				sl.free(c.OrgID)
				o.Wake()
			})
		}
		started += len(claims)
	}
}

// attempt sends a claimed delivery and records how it went. It gives up
// LeaseMargin before the lease ends, whatever held it up, so that the
// delivery is never sent by two workers at once. A delivery that fails
// waits for its retry; the webhook's others are tried anyway, since each
// event stands alone.
func (o *Outbox) attempt(ctx context.Context, c store.Claim, claimed time.Time) {
	sendCtx, cancel := context.WithDeadline(ctx, claimed.Add(o.cfg.Lease-LeaseMargin))
	body, err := o.payload(c.Event)
	var status *int
	if err == nil {
		status, err = o.Post(sendCtx, c.URL, c.Secret, c.Event.ID, body)
	}
	cancel()
	outcome, lastError, next := "delivered", "", time.Now()
	if err != nil {
		lastError = err.Error()
		outcome, next = "pending", time.Now().Add(retryAfter(c.Attempts))
		if c.Attempts >= o.cfg.MaxAttempts {
			outcome = "failed"
		}
		o.log.Warn("webhook delivery", "webhook_id", c.WebhookID, "event_id", c.EventID, "attempt", c.Attempts, "outcome", outcome, "err", err)
	}
	if err := o.st.FinishDelivery(ctx, c.ID, c.Attempts, outcome, status, lastError, next); err != nil {
		// Unrecorded, the attempt is made again when the lease runs out.
		o.log.Warn("record webhook delivery", "delivery_id", c.ID, "attempt", c.Attempts, "err", err)
	}
}

// Tested is what a test event's delivery did: the receiver's status, if
// it answered, and why it failed, if it did.
type Tested struct {
	Status *int
	Err    error
}

// Test sends body, a test event, to a webhook of the project now, signed
// as any delivery, and tells how it went. A test is a write like any under
// the project: refused, Conflict, while the project is archived. It
// returns NotFound for a webhook or project that is not there.
func (o *Outbox) Test(ctx context.Context, orgID, projectID, webhookID int64, body []byte) (Tested, error) {
	hook, err := o.st.GetWebhook(ctx, orgID, projectID, webhookID)
	if err != nil {
		return Tested{}, err
	}
	p, err := o.st.GetProject(ctx, orgID, projectID)
	if err != nil {
		return Tested{}, err
	}
	if p.State == store.Archived {
		return Tested{}, apperr.Errorf(apperr.Conflict, "project %d is archived, so read-only; restore it first", p.ID)
	}
	status, err := o.Post(ctx, hook.URL, hook.Secret, 0, body)
	return Tested{Status: status, Err: err}, nil
}

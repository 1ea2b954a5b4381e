// Package server serves the API of openapi/openapi.yaml over HTTP: Echo,
// middleware and the strict handlers oapi-codegen asks for. Handlers only
// translate between the generated types and the store's.
package server

import (
	"compress/gzip"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/openapi"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// Store is what the server needs of the database.
type Store interface {
	Ping(ctx context.Context) error
	Readiness(ctx context.Context) (store.Readiness, error)
	PoolStats() store.PoolStats

	Authenticate(ctx context.Context, secret string, orgID int64) (store.Principal, error)
	TouchTokens(ctx context.Context, ids []int64, at time.Time) error
	Me(ctx context.Context, userID int64) (store.User, []store.Membership, error)
	ListTokens(ctx context.Context, userID, before int64, limit int) ([]store.Token, bool, error)
	CreateScopedToken(ctx context.Context, userID int64, name string, expiresAt *time.Time, scope store.TokenScope) (store.Token, string, error)
	RevokeToken(ctx context.Context, userID, tokenID int64) error
	ListMembers(ctx context.Context, orgID, after int64, limit int) ([]store.Member, bool, error)
	AddMember(ctx context.Context, orgID int64, email, name string, role store.Role) (store.Member, error)
	UpdateMember(ctx context.Context, orgID, userID int64, role store.Role) (store.Member, error)
	RemoveMember(ctx context.Context, orgID, userID int64) error
	ListInvitations(ctx context.Context, orgID, before int64, limit int) ([]store.Invitation, bool, error)
	CreateInvitation(ctx context.Context, orgID, invitedBy int64, email string, role store.Role, expiresAt time.Time) (store.Invitation, string, error)
	RevokeInvitation(ctx context.Context, orgID, id int64) error
	AcceptInvitation(ctx context.Context, code, name string) (store.Accepted, error)
	AcceptInvitationAs(ctx context.Context, code string, userID int64) (store.Membership, error)

	ListProjects(ctx context.Context, orgID, after int64, limit int) ([]store.Project, bool, error)
	CreateProject(ctx context.Context, orgID int64, name, description string) (store.Project, error)
	GetProject(ctx context.Context, orgID, projectID int64) (store.Project, error)
	UpdateProject(ctx context.Context, orgID, projectID int64, patch store.ProjectPatch) (store.Project, error)
	DeleteProject(ctx context.Context, orgID, projectID int64) error

	ListBlueprints(ctx context.Context, orgID, after int64, limit int) ([]store.Blueprint, bool, error)
	GetBlueprint(ctx context.Context, orgID, id int64) (store.Blueprint, error)
	DeleteBlueprint(ctx context.Context, orgID, id int64) error

	ListSensors(ctx context.Context, orgID, projectID, after int64, limit int) ([]store.Sensor, bool, error)
	GetSensor(ctx context.Context, key store.SensorKey) (store.Sensor, error)
	DeleteSensor(ctx context.Context, key store.SensorKey) error

	WALPosition(ctx context.Context) (string, error)

	ListAlarmLevels(ctx context.Context, orgID, projectID int64, after, limit int) ([]store.AlarmLevel, bool, error)
	CreateAlarmLevel(ctx context.Context, orgID, projectID int64, l store.AlarmLevel) (store.AlarmLevel, error)
	UpdateAlarmLevel(ctx context.Context, orgID, projectID, levelID int64, patch store.AlarmLevelPatch) (store.AlarmLevel, error)
	DeleteAlarmLevel(ctx context.Context, orgID, projectID, levelID int64) error
	ListAlarmRules(ctx context.Context, key store.SensorKey, after store.RuleKey, limit int) ([]store.AlarmRule, bool, *store.OverdueRule, error)
	ListAlarms(ctx context.Context, orgID, projectID int64, after store.AlarmKey, limit int) ([]store.Alarm, bool, error)
	AcknowledgeAlarm(ctx context.Context, orgID, projectID, alarmID, userID int64, note string) (store.Alarm, error)
	ListAlarmEvents(ctx context.Context, orgID, projectID int64, q store.AlarmEventQuery) ([]store.AlarmEvent, bool, error)
	GetOverdueRule(ctx context.Context, key store.SensorKey) (store.OverdueRule, error)
	SetOverdueRule(ctx context.Context, key store.SensorKey, level string, after time.Duration) (store.OverdueRule, error)
	DeleteOverdueRule(ctx context.Context, key store.SensorKey) error
	GetImportProfile(ctx context.Context, key store.SensorKey) (store.ImportProfile, error)
	SetImportProfile(ctx context.Context, key store.SensorKey, spec store.ImportProfileSpec) (store.ImportProfile, error)
	DeleteImportProfile(ctx context.Context, key store.SensorKey) error
	ListWebhooks(ctx context.Context, orgID, projectID, after int64, limit int) ([]store.Webhook, bool, error)
	GetWebhook(ctx context.Context, orgID, projectID, webhookID int64) (store.Webhook, error)
	CreateWebhook(ctx context.Context, orgID, projectID int64, url, secret string) (store.Webhook, error)
	DeleteWebhook(ctx context.Context, orgID, projectID, webhookID int64) error
	ListDeliveries(ctx context.Context, orgID, projectID, webhookID, before int64, limit int) ([]store.Delivery, bool, error)
	ClaimDeliveries(ctx context.Context, q store.ClaimQuery) ([]store.Claim, error)
	FinishDelivery(ctx context.Context, id int64, attempt int, status string, httpStatus *int, lastError string, next time.Time) error
}

// Config holds the limits a deployment may change.
type Config struct {
	MaxBatch     int           // readings in one POST
	MaxInputs    int           // inputs in one reading; 0: store.DefaultMaxSensorInputs
	MaxBodyBytes int64         // bytes in one request body
	RateLimit    float64       // requests a second per token; 0: no limit
	RateBurst    int           // requests a token may make at once
	DBTimeout    time.Duration // how long a request may wait for the database; 0: no limit
	// MaxStreams and MaxStreamsPerToken cap the exports open at once, in
	// total and per token; 0: no limit.
	MaxStreams, MaxStreamsPerToken int
	// Standby, when set, serves the reads of standbyOperations; a read
	// waits at most StandbyWait for it to replay the client's last write.
	Standby     Standby
	StandbyWait time.Duration
	// WebhookTimeout bounds an attempt to deliver to a webhook, and
	// WebhookMaxAttempts the attempts before a delivery is failed.
	WebhookTimeout     time.Duration
	WebhookMaxAttempts int
	// WebhookLease is how long a claimed delivery is its replica's: at
	// least WebhookTimeout + WebhookLeaseMargin.
	WebhookLease time.Duration
	// WebhookConcurrency bounds the deliveries this replica sends at once,
	// an organization's webhooks a quarter of them; and
	// WebhookConcurrencyPerWebhook those of one webhook, on all replicas
	// together.
	WebhookConcurrency, WebhookConcurrencyPerWebhook int
	// WebhookAllowPrivate lets webhooks reach loopback, private and every
	// other special-purpose address: for tests and receivers on premises.
	WebhookAllowPrivate bool
}

// Server is the API's HTTP handler.
type Server struct {
	store    Store
	log      *slog.Logger
	cfg      Config
	ops      operations
	echo     *echo.Echo
	tokenUse tokenUse
	core     *sensing.Service // the domain, on the primary
	standby  *sensing.Service // the domain reading readings from cfg.Standby; core without one
	limits   *rateLimits
	streams  *streamLimits
	metrics  *metrics
	specJSON gen.OpenAPIDocument // set by publishContract
	webhooks *http.Client
	// wake has DeliverWebhooks look for due deliveries before its next
	// poll; it holds one wake-up at most.
	wake chan struct{}
}

var _ gen.StrictServerInterface = (*Server)(nil)

// New returns the server of core, the domain, and st, the store's plain
// rows. It fails when the embedded spec leaves an operation without a
// decision on who may call it.
func New(core *sensing.Service, st Store, log *slog.Logger, cfg Config) (*Server, error) {
	spec, err := openapi.Load()
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	ops, err := loadOperations(spec)
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	s := &Server{core: core, standby: core, store: st, log: log, cfg: cfg, ops: ops, limits: newRateLimits(cfg.RateLimit, cfg.RateBurst),
		streams: newStreamLimits(cfg.MaxStreams, cfg.MaxStreamsPerToken), wake: make(chan struct{}, 1)}
	if cfg.Standby != nil {
		s.standby = core.WithReader(cfg.Standby)
	}
	s.metrics = newMetrics(st, core.FormulaErrors, log, s.streams.openStreams)
	if s.cfg.WebhookTimeout <= 0 {
		s.cfg.WebhookTimeout = 10 * time.Second
	}
	if s.cfg.WebhookMaxAttempts <= 0 {
		s.cfg.WebhookMaxAttempts = 8
	}
	if s.cfg.WebhookLease <= 0 {
		s.cfg.WebhookLease = s.cfg.WebhookTimeout + time.Minute
	}
	if s.cfg.WebhookLease < s.cfg.WebhookTimeout+WebhookLeaseMargin {
		return nil, fmt.Errorf("webhook lease %v must be at least the webhook timeout %v and %v more", s.cfg.WebhookLease, s.cfg.WebhookTimeout, WebhookLeaseMargin)
	}
	if s.cfg.WebhookConcurrency <= 0 {
		s.cfg.WebhookConcurrency = 32
	}
	if s.cfg.WebhookConcurrencyPerWebhook <= 0 {
		s.cfg.WebhookConcurrencyPerWebhook = 1
	}
	s.webhooks = webhookClient(s.cfg.WebhookTimeout, cfg.WebhookAllowPrivate)

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	if cfg.MaxInputs == 0 {
		cfg.MaxInputs = store.DefaultMaxSensorInputs
	}
	e.JSONSerializer = jsonSerializer{maxBatch: cfg.MaxBatch, maxInputs: cfg.MaxInputs}
	e.Use(
		s.requestIDs,
		s.accessLog,
		recoverPanics,
		secureHeaders,
		// The fastest level: on a page of readings it costs a fraction of
		// the default level's time for a little less compression
		// (BenchmarkEncodePage measures both).
		middleware.GzipWithConfig(middleware.GzipConfig{MinLength: 1024, Level: gzip.BestSpeed}),
		rejectSemicolons,
		bodyLimit(cfg.MaxBodyBytes),
		decompressRequest(cfg.MaxBodyBytes),
		keepAccept,
		wholeSegments,
		s.authenticate,
		s.limitStreams,
		s.validateRequest,
		s.routeReads,
	)
	routes := headToo{e}
	gen.RegisterHandlers(routes, gen.NewStrictHandler(s, []gen.StrictMiddlewareFunc{s.databaseDeadline}))
	routes.GET("/metrics", s.metrics.handler())
	if err := s.publishContract(routes); err != nil {
		return nil, err
	}
	registerConsole(e)
	s.echo = e
	return s, nil
}

// headToo registers each GET route for HEAD as well, with the same handler,
// so that HEAD answers what GET answers, headers included: net/http drops
// the body of a response to HEAD, and computes its Content-Length as it
// would for GET.
type headToo struct{ *echo.Echo }

func (r headToo) GET(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	r.Echo.HEAD(path, h, m...)
	return r.Echo.GET(path, h, m...)
}

// wholeSegments answers 404 when a path parameter took more than one
// segment. Echo lets a parameter that ends a route match the rest of the
// path, so /blueprints/9/foo would reach getBlueprint with the id "9/foo"
// and answer 400 quoting it; no operation has such a path.
func wholeSegments(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for i, name := range c.ParamNames() {
			if name != "*" && strings.Contains(c.ParamValues()[i], "/") {
				return echo.ErrNotFound
			}
		}
		return next(c)
	}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.echo.ServeHTTP(w, r)
}

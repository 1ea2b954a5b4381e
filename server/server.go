// Package server serves the API of openapi/openapi.yaml over HTTP: Echo,
// middleware and the strict handlers oapi-codegen asks for. Handlers only
// translate between the generated types and the store's.
package server

import (
	"compress/gzip"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/openapi"
	"github.com/sensorreadings/readings/outbox"
	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/tokenuse"
)

// Deps are what the handlers call: the domain (package sensing) for
// readings and what is computed from them, the outbox for a webhook's
// test, and the store for plain rows. Each is an interface declared next
// to the handlers that use it, listing only what they call.
type Deps struct {
	Health         Health
	Authenticator  Authenticator
	TokenUse       TokenUse
	Profile        Profile
	Members        Members
	Invitations    Invitations
	Projects       Projects
	Blueprints     Blueprints
	BlueprintEdits BlueprintEdits
	Sensors        Sensors
	SensorEdits    SensorEdits
	ImportProfiles ImportProfiles
	Alarms         Alarms
	RuleEdits      RuleEdits
	Statuses       Statuses
	Webhooks       Webhooks
	WebhookTester  WebhookTester
	Writes         Writes
	Quality        Quality
	// Reads serve the reads of readings from the primary, and
	// StandbyReads, when there is a standby (Config.Standby), from it.
	Reads, StandbyReads Reads
	// FormulaErrors counts the outputs left out, for the metrics.
	FormulaErrors func() int64
}

// DepsOf are the deps of a service on one database: db for plain rows,
// core for readings and what is computed from them (all its reads on the
// primary), ob for a webhook's test, tokens to record token use.
func DepsOf(db *store.DB, core *sensing.Service, ob *outbox.Outbox, tokens *tokenuse.Recorder) Deps {
	return Deps{
		Health: db, Authenticator: db, TokenUse: tokens, Profile: db, Members: db, Invitations: db, Projects: db,
		Blueprints: db, BlueprintEdits: core, Sensors: db, SensorEdits: core, ImportProfiles: db,
		Alarms: db, RuleEdits: core, Statuses: core, Webhooks: db, WebhookTester: ob,
		Writes: core, Quality: core, Reads: core, FormulaErrors: core.FormulaErrors,
	}
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
	// Standby, when set, serves the reads of standbyOperations through
	// Deps.StandbyReads; a read waits at most StandbyWait for it to
	// replay the client's last write.
	Standby     Standby
	StandbyWait time.Duration
}

// Server is the API's HTTP handler.
type Server struct {
	Deps
	log      *slog.Logger
	cfg      Config
	ops      operations
	echo     *echo.Echo
	limits   *rateLimits
	streams  *streamLimits
	metrics  *metrics
	specJSON gen.OpenAPIDocument // set by publishContract
	// validated are requests that passed validateRequest (validRequests).
	validated validRequests
}

var _ gen.StrictServerInterface = (*Server)(nil)

// New returns the server of deps. It fails when the embedded spec leaves an
// operation without a decision on who may call it, or when a standby is
// configured without the reads that go to it.
func New(deps Deps, log *slog.Logger, cfg Config) (*Server, error) {
	spec, err := openapi.Load()
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	ops, err := loadOperations(spec)
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	if (cfg.Standby == nil) != (deps.StandbyReads == nil) {
		return nil, fmt.Errorf("a standby needs the reads that go to it, and those reads a standby")
	}
	s := &Server{Deps: deps, log: log, cfg: cfg, ops: ops, limits: newRateLimits(cfg.RateLimit, cfg.RateBurst),
		streams: newStreamLimits(cfg.MaxStreams, cfg.MaxStreamsPerToken)}
	s.metrics = newMetrics(deps.Health, deps.FormulaErrors, log, s.streams.openStreams)
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
	// The last wraps the others: writePosition asks under the deadline.
	gen.RegisterHandlers(routes, gen.NewStrictHandler(s, []gen.StrictMiddlewareFunc{s.forgetPrincipals, s.writePosition, s.databaseDeadline}))
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

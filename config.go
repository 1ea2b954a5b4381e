package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sensorreadings/readings/outbox"
	"github.com/sensorreadings/readings/store"
)

// config is the service's configuration: flags whose defaults come from the
// environment, so that both `-addr :9090` and `LISTEN_ADDR=:9090` work.
type config struct {
	addr            string
	databaseURL     string
	readURL         string
	readWait        time.Duration
	logFormat       string
	logLevel        string
	migrate         bool
	maxBatch        int
	maxBodyBytes    int64
	maxInputs       int
	maxFuture       time.Duration
	dbMaxConns      int
	dbTimeout       time.Duration
	rateLimit       float64
	rateBurst       int
	maxStreams      int
	maxStreamsToken int
	shutdownTimeout time.Duration
	pprofAddr       string
	tlsCert         string
	tlsKey          string
	alarmCheck      time.Duration
	rollupInterval  time.Duration
	rollupWorkers   int
	webhookTimeout  time.Duration
	webhookAttempts int
	webhookPrivate  bool
	webhookLease    time.Duration
	webhookConc     int
	webhookConcHook int
	storage         store.StorageConfig
	caps            store.Limits // all but SensorInputs, which is maxInputs
}

func (c *config) register(fs *flag.FlagSet, e *env) {
	fs.StringVar(&c.addr, "addr", e.string("LISTEN_ADDR", "127.0.0.1:8080"), "address to listen on `host:port` (LISTEN_ADDR)")
	fs.StringVar(&c.databaseURL, "database-url", e.string("DATABASE_URL", ""), "PostgreSQL `url` (DATABASE_URL)")
	fs.StringVar(&c.readURL, "read-database-url", e.string("READ_DATABASE_URL", ""), "a hot standby's PostgreSQL `url` for pages, exports, aggregates and latest values; off when empty (READ_DATABASE_URL)")
	fs.DurationVar(&c.readWait, "read-wait", e.duration("READ_WAIT", 200*time.Millisecond), "how long a read may wait for the standby to replay the client's last write before it reads the primary (READ_WAIT)")
	fs.StringVar(&c.logFormat, "log-format", e.string("LOG_FORMAT", "text"), "log format, text or json (LOG_FORMAT)")
	fs.StringVar(&c.logLevel, "log-level", e.string("LOG_LEVEL", "info"), "log level: debug, info, warn or error (LOG_LEVEL)")
	fs.BoolVar(&c.migrate, "migrate", e.bool("MIGRATE_ON_START", true), "apply pending migrations at start (MIGRATE_ON_START)")
	fs.IntVar(&c.maxBatch, "max-batch", e.int("MAX_BATCH", 10000), "most readings in one POST (MAX_BATCH)")
	fs.IntVar(&c.maxInputs, "max-inputs", e.int("MAX_INPUTS", store.DefaultMaxSensorInputs), "most inputs in one reading, and most distinct input ids of a sensor without a blueprint (MAX_INPUTS)")
	fs.Int64Var(&c.maxBodyBytes, "max-body", int64(e.int("MAX_BODY_BYTES", 16<<20)), "most bytes in one request body (MAX_BODY_BYTES)")
	fs.DurationVar(&c.maxFuture, "max-future", e.duration("MAX_FUTURE", 24*time.Hour), "refuse readings dated more than this after the server's clock; 0 for no limit (MAX_FUTURE)")
	fs.IntVar(&c.dbMaxConns, "db-max-conns", e.int("DB_MAX_CONNS", 0), "most database connections; 0 is max(4, CPUs) (DB_MAX_CONNS)")
	fs.DurationVar(&c.dbTimeout, "db-timeout", e.duration("DB_TIMEOUT", 20*time.Second), "how long a request may wait for the database before a 503; 0 for no limit (DB_TIMEOUT)")
	fs.Float64Var(&c.rateLimit, "rate-limit", e.float("RATE_LIMIT", 50), "requests a second per token; 0 for no limit (RATE_LIMIT)")
	fs.IntVar(&c.rateBurst, "rate-burst", e.int("RATE_BURST", 100), "requests a token may make at once (RATE_BURST)")
	fs.IntVar(&c.maxStreams, "max-streams", e.int("MAX_STREAMS", 0), "exports and file uploads open at once, below the database connections; 0 is half of them (MAX_STREAMS)")
	fs.IntVar(&c.maxStreamsToken, "max-streams-per-token", e.int("MAX_STREAMS_PER_TOKEN", 2), "exports and file uploads one token may have open at once (MAX_STREAMS_PER_TOKEN)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", e.duration("SHUTDOWN_TIMEOUT", 20*time.Second), "how long in-flight requests may finish after SIGTERM (SHUTDOWN_TIMEOUT)")
	fs.DurationVar(&c.rollupInterval, "rollup-interval", e.duration("ROLLUP_INTERVAL", 2*time.Second), "how often queued hours of rollups are recomputed, each once no write has queued it for an interval: one to two intervals after a write the aggregates read its hour from rollups again (ROLLUP_INTERVAL)")
	fs.IntVar(&c.rollupWorkers, "rollup-workers", e.int("ROLLUP_WORKERS", 2), "rounds of the rollups' maintainer at once, each on a database connection of its own, below db max conns (ROLLUP_WORKERS)")
	fs.DurationVar(&c.alarmCheck, "alarm-check-interval", e.duration("ALARM_CHECK_INTERVAL", 10*time.Second), "how often overdue sensors are checked, the most an overdue alarm is late (ALARM_CHECK_INTERVAL)")
	fs.DurationVar(&c.webhookTimeout, "webhook-timeout", e.duration("WEBHOOK_TIMEOUT", 10*time.Second), "how long a webhook receiver may take to answer (WEBHOOK_TIMEOUT)")
	fs.IntVar(&c.webhookAttempts, "webhook-max-attempts", e.int("WEBHOOK_MAX_ATTEMPTS", 8), "attempts of a webhook delivery before it is marked failed (WEBHOOK_MAX_ATTEMPTS)")
	fs.DurationVar(&c.webhookLease, "webhook-lease", e.duration("WEBHOOK_LEASE", time.Minute), "how long a claimed webhook delivery is its replica's, at least the webhook timeout and 5s more; a replica that dies leaves its deliveries to others after it (WEBHOOK_LEASE)")
	fs.IntVar(&c.webhookConc, "webhook-concurrency", e.int("WEBHOOK_CONCURRENCY", 32), "webhook deliveries a replica sends at once; one organization's webhooks get a quarter of them (WEBHOOK_CONCURRENCY)")
	fs.IntVar(&c.webhookConcHook, "webhook-concurrency-per-webhook", e.int("WEBHOOK_CONCURRENCY_PER_WEBHOOK", 1), "deliveries of one webhook in flight at once, on all replicas together; above 1, events may arrive out of order (WEBHOOK_CONCURRENCY_PER_WEBHOOK)")
	fs.BoolVar(&c.webhookPrivate, "webhook-allow-private", e.bool("WEBHOOK_ALLOW_PRIVATE", false), "let webhooks reach loopback, private and other special-purpose addresses (WEBHOOK_ALLOW_PRIVATE)")
	fs.StringVar(&c.tlsCert, "tls-cert", e.string("TLS_CERT", ""), "serve HTTPS with the PEM certificate chain in this `file`; needs -tls-key (TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tls-key", e.string("TLS_KEY", ""), "the PEM private key `file` of -tls-cert (TLS_KEY)")
	// The caps of what clients grow; docs/reliability.md says why these.
	caps := store.DefaultLimits()
	fs.IntVar(&c.caps.Projects, "max-projects", e.int("MAX_PROJECTS", caps.Projects), "most projects of an organization (MAX_PROJECTS)")
	fs.IntVar(&c.caps.Blueprints, "max-blueprints", e.int("MAX_BLUEPRINTS", caps.Blueprints), "most blueprints of an organization (MAX_BLUEPRINTS)")
	fs.IntVar(&c.caps.Members, "max-members", e.int("MAX_MEMBERS", caps.Members), "most members of an organization, its pending invitations included (MAX_MEMBERS)")
	fs.IntVar(&c.caps.Invitations, "max-invitations", e.int("MAX_INVITATIONS", caps.Invitations), "most pending invitations of an organization, and finished ones kept (MAX_INVITATIONS)")
	fs.IntVar(&c.caps.Sensors, "max-sensors", e.int("MAX_SENSORS", caps.Sensors), "most sensors of a project (MAX_SENSORS)")
	fs.IntVar(&c.caps.AlarmLevels, "max-alarm-levels", e.int("MAX_ALARM_LEVELS", caps.AlarmLevels), "most alarm levels of a project (MAX_ALARM_LEVELS)")
	fs.IntVar(&c.caps.Webhooks, "max-webhooks", e.int("MAX_WEBHOOKS", caps.Webhooks), "most webhooks of a project (MAX_WEBHOOKS)")
	fs.IntVar(&c.caps.AlarmRules, "max-alarm-rules", e.int("MAX_ALARM_RULES", caps.AlarmRules), "most alarm rules of a sensor (MAX_ALARM_RULES)")
	fs.IntVar(&c.caps.Flags, "max-flags", e.int("MAX_FLAGS", caps.Flags), "most flags in force set by people on a sensor (MAX_FLAGS)")
	fs.IntVar(&c.caps.Tokens, "max-tokens", e.int("MAX_TOKENS", caps.Tokens), "most live tokens of a user, and revoked or expired ones kept (MAX_TOKENS)")
	fs.StringVar(&c.pprofAddr, "pprof-addr", e.string("PPROF_ADDR", ""), "serve /debug/pprof on this `host:port`, for profiling; off when empty (PPROF_ADDR)")
	// TimescaleDB only, applied with the migrations; docs/performance.md
	// says why these defaults suit minute-rate sensors.
	c.storage.ChunkInterval = e.days("CHUNK_INTERVAL", 7*day)
	c.storage.CompressAfter = e.days("COMPRESS_AFTER", 7*day)
	c.storage.Retention = e.days("RETENTION", 0)
	fs.Var((*days)(&c.storage.ChunkInterval), "chunk-interval", "TimescaleDB: the `duration` of one chunk of readings, e.g. 7d or 12h (CHUNK_INTERVAL)")
	fs.Var((*days)(&c.storage.CompressAfter), "compress-after", "TimescaleDB: compress a chunk once all of it is older than `age`, e.g. 7d; 0 never (COMPRESS_AFTER)")
	fs.Var((*days)(&c.storage.Retention), "retention", "TimescaleDB: drop a chunk of readings once all of it is older than `age`, e.g. 365d; 0 keeps them forever (RETENTION)")
}

func (c *config) validate() error {
	var errs []error
	if c.databaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL (or -database-url) is required; `make run` starts a private database for you"))
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		errs = append(errs, fmt.Errorf("log format %q is neither text nor json", c.logFormat))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		errs = append(errs, fmt.Errorf("log level %q: %w", c.logLevel, err))
	}
	if c.maxBatch < 1 {
		errs = append(errs, fmt.Errorf("max batch %d must be at least 1", c.maxBatch))
	}
	if c.maxInputs < 1 || c.maxInputs > 1000 {
		errs = append(errs, fmt.Errorf("max inputs %d must be from 1 to 1000", c.maxInputs))
	}
	if c.maxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("max body %d must be at least 1024 bytes", c.maxBodyBytes))
	}
	if c.maxFuture < 0 {
		errs = append(errs, fmt.Errorf("max future %v cannot be negative", c.maxFuture))
	}
	if c.dbMaxConns < 0 || c.dbMaxConns > 1000 {
		errs = append(errs, fmt.Errorf("db max conns %d must be from 0 to 1000", c.dbMaxConns))
	}
	if c.readWait <= 0 || c.readWait > 10*time.Second {
		errs = append(errs, fmt.Errorf("read wait %v must be above 0 and at most 10s", c.readWait))
	}
	if c.dbTimeout < 0 || c.shutdownTimeout < 0 {
		errs = append(errs, errors.New("timeouts cannot be negative"))
	}
	if c.rateLimit < 0 || (c.rateLimit > 0 && c.rateBurst < 1) {
		errs = append(errs, fmt.Errorf("rate limit %v needs a burst of at least 1 (got %d)", c.rateLimit, c.rateBurst))
	}
	if err := c.storage.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.maxStreams < 0 || (c.dbMaxConns > 0 && c.maxStreams >= c.dbMaxConns) {
		errs = append(errs, fmt.Errorf("max streams %d must be from 0 (half the database connections) to below db max conns %d", c.maxStreams, c.dbMaxConns))
	}
	if c.rollupWorkers < 1 || c.rollupWorkers > 16 || (c.dbMaxConns > 0 && c.rollupWorkers >= c.dbMaxConns) {
		errs = append(errs, fmt.Errorf("rollup workers %d must be from 1 to 16, and below db max conns", c.rollupWorkers))
	}
	if c.rollupInterval < 100*time.Millisecond || c.rollupInterval > 5*time.Minute {
		return fmt.Errorf("-rollup-interval %v is out of 100ms to 5m", c.rollupInterval)
	}
	if c.alarmCheck < time.Second || c.alarmCheck > 5*time.Minute {
		return fmt.Errorf("-alarm-check-interval %v is out of 1s to 5m", c.alarmCheck)
	}
	if c.webhookTimeout < time.Second || c.webhookTimeout > time.Minute {
		return fmt.Errorf("-webhook-timeout %v is out of 1s to 1m", c.webhookTimeout)
	}
	if c.webhookAttempts < 1 || c.webhookAttempts > 20 {
		return fmt.Errorf("-webhook-max-attempts %d is out of 1 to 20", c.webhookAttempts)
	}
	if c.webhookLease < c.webhookTimeout+outbox.LeaseMargin || c.webhookLease > time.Hour {
		return fmt.Errorf("-webhook-lease %v must be at least -webhook-timeout %v and %v more, so that an attempt ends before its lease, and at most 1h", c.webhookLease, c.webhookTimeout, outbox.LeaseMargin)
	}
	if c.webhookConc < 1 || c.webhookConc > 1000 {
		return fmt.Errorf("-webhook-concurrency %d is out of 1 to 1000", c.webhookConc)
	}
	if c.webhookConcHook < 1 || c.webhookConcHook > 16 {
		return fmt.Errorf("-webhook-concurrency-per-webhook %d is out of 1 to 16", c.webhookConcHook)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		errs = append(errs, errors.New("-tls-cert and -tls-key (TLS_CERT, TLS_KEY) go together: set both to serve HTTPS, or neither"))
	}
	if c.maxStreamsToken < 1 {
		errs = append(errs, fmt.Errorf("max streams per token %d must be at least 1", c.maxStreamsToken))
	}
	for _, f := range c.capFlags() {
		if f.value < 1 {
			errs = append(errs, fmt.Errorf("-%s %d must be at least 1", f.name, f.value))
		}
	}
	return errors.Join(errs...)
}

// logValue lists the settings for the start-up log, with the database
// password masked.
func (c *config) logValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("addr", c.addr),
		slog.String("database_url", redactURL(c.databaseURL)),
		slog.String("read_database_url", redactURL(c.readURL)),
		slog.Duration("read_wait", c.readWait),
		slog.String("log_format", c.logFormat),
		slog.String("log_level", c.logLevel),
		slog.Bool("migrate", c.migrate),
		slog.Int("max_batch", c.maxBatch),
		slog.Int64("max_body_bytes", c.maxBodyBytes),
		slog.Int("max_inputs", c.maxInputs),
		slog.Duration("max_future", c.maxFuture),
		slog.Int("db_max_conns", c.dbMaxConns),
		slog.Duration("db_timeout", c.dbTimeout),
		slog.Float64("rate_limit", c.rateLimit),
		slog.Int("rate_burst", c.rateBurst),
		slog.Int("max_streams", c.maxStreams),
		slog.Int("max_streams_per_token", c.maxStreamsToken),
		slog.Duration("shutdown_timeout", c.shutdownTimeout),
		slog.String("pprof_addr", c.pprofAddr),
		slog.String("tls_cert", c.tlsCert),
		slog.String("tls_key", c.tlsKey),
		slog.Duration("alarm_check_interval", c.alarmCheck),
		slog.Duration("rollup_interval", c.rollupInterval),
		slog.Int("rollup_workers", c.rollupWorkers),
		slog.Duration("webhook_timeout", c.webhookTimeout),
		slog.Int("webhook_max_attempts", c.webhookAttempts),
		slog.Bool("webhook_allow_private", c.webhookPrivate),
		slog.Duration("webhook_lease", c.webhookLease),
		slog.Int("webhook_concurrency", c.webhookConc),
		slog.Int("webhook_concurrency_per_webhook", c.webhookConcHook),
		slog.String("chunk_interval", days(c.storage.ChunkInterval).String()),
		slog.String("compress_after", days(c.storage.CompressAfter).String()),
		slog.String("retention", days(c.storage.Retention).String()),
	}
	for _, f := range c.capFlags() {
		attrs = append(attrs, slog.Int(strings.ReplaceAll(f.name, "-", "_"), f.value))
	}
	return slog.GroupValue(attrs...)
}

// capFlag is a cap's flag and value.
type capFlag struct {
	name  string
	value int
}

// capFlags lists the caps of what clients grow, for validation and the log.
func (c *config) capFlags() []capFlag {
	return []capFlag{
		{"max-projects", c.caps.Projects}, {"max-blueprints", c.caps.Blueprints}, {"max-members", c.caps.Members},
		{"max-invitations", c.caps.Invitations}, {"max-sensors", c.caps.Sensors}, {"max-alarm-levels", c.caps.AlarmLevels},
		{"max-webhooks", c.caps.Webhooks}, {"max-alarm-rules", c.caps.AlarmRules}, {"max-tokens", c.caps.Tokens},
		{"max-flags", c.caps.Flags},
	}
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

func parseConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("readings "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	e := &env{getenv: getenv}
	c.register(fs, e)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return &c, errors.Join(errors.Join(e.errs...), c.validate())
}

func newLogger(c *config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.logLevel)) // validated
	opts := &slog.HandlerOptions{Level: level}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// env reads flag defaults from the environment and remembers the values it
// could not parse, so that LOG_LEVEL=loud is an error, not a silent default.
type env struct {
	getenv func(string) string
	errs   []error
}

func (e *env) string(key, fallback string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return fallback
}

func (e *env) int(key string, fallback int) int {
	return parseEnv(e, key, fallback, "a whole number", strconv.Atoi)
}

func (e *env) float(key string, fallback float64) float64 {
	return parseEnv(e, key, fallback, "a number", func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

func (e *env) bool(key string, fallback bool) bool {
	return parseEnv(e, key, fallback, "true or false", strconv.ParseBool)
}

func (e *env) duration(key string, fallback time.Duration) time.Duration {
	return parseEnv(e, key, fallback, "a duration such as 30s", time.ParseDuration)
}

func (e *env) days(key string, fallback time.Duration) time.Duration {
	return parseEnv(e, key, fallback, "a duration such as 7d or 12h", parseDays)
}

const day = 24 * time.Hour

// days is a duration flag that also takes whole days, "7d", the unit chunk
// and retention periods are thought in.
type days time.Duration

func (d days) String() string {
	v := time.Duration(d)
	if v != 0 && v%day == 0 {
		return strconv.FormatInt(int64(v/day), 10) + "d"
	}
	return v.String()
}

func (d *days) Set(s string) error {
	v, err := parseDays(s)
	*d = days(v)
	return err
}

func parseDays(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		v, err := strconv.ParseUint(n, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number of days", s)
		}
		return time.Duration(v) * day, nil
	}
	return time.ParseDuration(s)
}

func parseEnv[T any](e *env, key string, fallback T, want string, parse func(string) (T, error)) T {
	raw := e.getenv(key)
	if raw == "" {
		return fallback
	}
	v, err := parse(raw)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q is not %s", key, raw, want))
		return fallback
	}
	return v
}

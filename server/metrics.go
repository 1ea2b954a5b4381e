package server

import (
	"log/slog"

	"github.com/sensorreadings/readings/store"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are what /metrics exposes, on a registry of the server's own.
// Labels are operation ids and statuses, never anything a client chose
// freely (and never a token). A request whose client went away before it
// ended counts as status 499.
type metrics struct {
	registry     *prometheus.Registry
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	ingested     prometheus.Counter
	standbyReads prometheus.Counter
}

// newMetrics registers the metrics; formulaErrors is the domain's count of
// outputs left out (sensing.Service.FormulaErrors).
func newMetrics(st Health, formulaErrors func() int64, log *slog.Logger, openStreams func() int) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "readings_http_requests_total",
			Help: "HTTP requests by operation (the spec's operationId) and status.",
		}, []string{"operation", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "readings_http_request_duration_seconds",
			Help:    "How long requests took, by operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"operation"}),
		ingested: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "readings_ingested_total",
			Help: "Readings stored, new or overwriting.",
		}),
		standbyReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "readings_standby_reads_total",
			Help: "Read requests served from the hot standby; the others read the primary.",
		}),
	}
	pool := func(name, help string, value func(s store.PoolStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "readings_db_pool_" + name, Help: help},
			func() float64 { return value(st.PoolStats()) })
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.duration, m.ingested, m.standbyReads,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "readings_formula_errors_total",
			Help: "Outputs left out because their formula came to NaN or an infinity, or a stored formula failed to compile.",
		}, func() float64 { return float64(formulaErrors()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "readings_http_open_streams", Help: "Streams open now: exports and file uploads."},
			func() float64 { return float64(openStreams()) }),
		pool("max_connections", "The pool's connection limit.", func(s store.PoolStats) float64 { return float64(s.Max) }),
		pool("connections", "Open connections.", func(s store.PoolStats) float64 { return float64(s.Total) }),
		pool("idle_connections", "Idle connections.", func(s store.PoolStats) float64 { return float64(s.Idle) }),
		pool("acquired_connections", "Connections in use.", func(s store.PoolStats) float64 { return float64(s.Acquired) }),
		pool("acquires", "Connections taken from the pool, ever.", func(s store.PoolStats) float64 { return float64(s.Acquires) }),
		pool("empty_acquires", "Acquires that had to wait for a connection, ever.", func(s store.PoolStats) float64 { return float64(s.EmptyAcquires) }),
		pool("acquire_wait_seconds", "Time spent waiting for connections, ever.", func(s store.PoolStats) float64 { return s.AcquireWait.Seconds() }),
	)
	m.registry.MustRegister(newOpsCollector(st, log))
	return m
}

func (m *metrics) handler() echo.HandlerFunc {
	// The server gzips every large response; promhttp compressing too would
	// send gzip inside gzip.
	return echo.WrapHandler(promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{DisableCompression: true}))
}

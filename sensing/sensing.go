// Package sensing is the service's domain: what becomes of a sensor's
// readings. One pipeline stores every write of readings, whatever brings
// it (a JSON batch, a logger's file): check each reading, lock the sensor,
// store the readings, step the alarm rules, queue the hours for the
// rollups and keep the newest reading, in one transaction. Reads compute
// the outputs of the readings they return with the sensor's formulas and
// the values of its linked inputs, and aggregates merge the hourly
// rollups with the readings the rollups do not cover. An edit of formulas,
// links or rules rechecks the alarms against the newest reading in its own
// transaction. Two workers keep what time changes: the rollups maintainer
// and the overdue check.
//
// It runs the transactions: package store gives it a transaction (store.Tx)
// whose methods are SQL and return rows, and calls nothing back. The
// decisions of alarm rules are package alarms', the formula language
// package formulas', the parsing of files package fileimport's.
package sensing

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/store"
)

// Config holds what a deployment may change of the domain.
type Config struct {
	// MaxFuture is how far after the server's clock a reading may be
	// dated; 0: no limit.
	MaxFuture time.Duration
	// DBTimeout bounds the statements of a write that streams (a file),
	// whose request the server cannot bound: taking the sensor's lock,
	// and what follows the stream. 0: no limit.
	DBTimeout time.Duration
	// MaxLinkValues bounds the values of a linked input's source that an
	// aggregate reads; 0: DefaultMaxLinkValues.
	MaxLinkValues int
	// ReadingsOnly has aggregates read the readings alone, never the
	// rollups, and add every reading in Go, never PostgreSQL's aggregates
	// of them: what the other answers must equal, for the checks of the
	// rollups.
	ReadingsOnly bool
	// OnEvents, if set, is called after a write of readings committed
	// alarm events in a project with webhooks, so that their deliveries
	// need not wait for the next poll. A write whose project has none
	// does not call it: a claim of deliveries that finds none cost row
	// 11e of make bench (a rate rule raising events, no webhook) 3-5 % of
	// the service's CPU, and its transaction PostgreSQL's.
	OnEvents func()
}

// Service is the domain, on the primary database.
type Service struct {
	db     *store.DB
	reader Reader // where reads of readings go: db, or a hot standby
	// readerHasSensors: the reader is the primary, whose sensors a read
	// may look up in the round trip of its readings; a standby's sensors
	// may lag the primary's, which reads of readings take theirs from.
	readerHasSensors bool
	log              *slog.Logger
	cfg              Config
	prepared         *formulas.Cache
	pageHints        *pageHints
	formulaErrors    *counter
	rollupCursor     *atomic.Int64 // the sensor whose queued hours the maintainer took last
	keptMemory       *sync.Pool    // of *store.RateWindow: what keptRoom lends
	held             *heldWindows  // what the rate rules of the sensors it wrote keep
	outputMemory     *sync.Pool    // of *batchOutputs: what rollBatch keeps for the rules
	rollupWake       chan struct{} // wakes this replica's maintainer before its interval
	backendReads     *backendReads // of the reader's backends
}

// Reader is what the reads of readings need of a database: the primary,
// or a hot standby that serves them. *store.DB is one.
type Reader interface {
	ListReadings(ctx context.Context, sensor store.Sensor, q store.ReadingQuery, fn func(*store.Reading) error) error
	ReadPage(ctx context.Context, r store.PageRead, head func(*store.Sensor, []store.Flag) error, fn func(*store.Reading) error) error
	LinkSource(ctx context.Context, of store.Sensor, id int64) (store.Sensor, error)
	ListLinkReadings(ctx context.Context, sensor store.Sensor, q store.LinkQuery, head func([]store.Flag) error, fn func(*store.Reading) error) error
	InputIDs(ctx context.Context, sensor store.Sensor) ([]int64, error)
	LatestReadings(ctx context.Context, orgID, projectID, after int64, limit int, instances bool) ([]store.Latest, bool, error)
	Buckets(ctx context.Context, q store.BucketQuery) ([]time.Time, error)
	InSnapshot(ctx context.Context, fn func(*store.Tx) error) error
	SensorFlags(ctx context.Context, sensorID int64, from, to time.Time, asOf *time.Time) ([]store.Flag, error)
	FlaggedAt(ctx context.Context, sensorIDs []int64, at []time.Time) (map[int64]bool, error)
}

var _ Reader = (*store.DB)(nil)

// New returns the domain on db, which it uses for every write and read
// until WithReader gives reads another database.
func New(db *store.DB, log *slog.Logger, cfg Config) *Service {
	return &Service{db: db, reader: db, readerHasSensors: true, log: log, cfg: cfg, prepared: &formulas.Cache{}, pageHints: &pageHints{}, formulaErrors: &counter{}, rollupCursor: &atomic.Int64{},
		keptMemory: &sync.Pool{}, held: &heldWindows{}, outputMemory: &sync.Pool{}, rollupWake: make(chan struct{}, 1),
		backendReads: &backendReads{}}
}

// WithReader returns the domain reading the readings it serves (pages,
// exports, aggregates, latest values) from r, a hot standby, and
// everything else, the sensors read included, from the primary. It shares
// s's compiled formulas and counters.
func (s *Service) WithReader(r Reader) *Service {
	c := *s
	c.reader, c.readerHasSensors = r, false
	c.backendReads = &backendReads{} // the standby's backends are others
	return &c
}

// FormulaErrors is how many outputs were left out because their formula
// came to NaN or an infinity, or a stored formula failed to compile, since
// the service started: for the metrics.
func (s *Service) FormulaErrors() int64 { return s.formulaErrors.n.Load() }

// counter counts for the metrics, from any goroutine.
type counter struct{ n atomic.Int64 }

func (c *counter) add(n int64) {
	if c != nil {
		c.n.Add(n)
	}
}

// bounded is ctx bounded by the database timeout, for the statements of a
// write whose request the server does not bound.
func (s *Service) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.DBTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.cfg.DBTimeout)
}

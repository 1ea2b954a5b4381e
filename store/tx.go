package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tx is a transaction of the DB. The store's methods that take part in a
// write the domain makes of several steps (store the readings, step the
// alarms, keep the newest reading) are methods of Tx, so that the domain
// runs the transaction and its steps share it; the store calls nothing
// back. A Tx is valid only inside the function given to InTx, InTxOnce or
// InSnapshot. Its methods return the service's errors, as the DB's do.
type Tx struct {
	tx     *pipelinedTx
	limits Limits
	pool   *pgxpool.Pool // the DB's, for Beside
}

// DefaultTxAttempts is how many times a transaction that PostgreSQL aborts
// as a deadlock's victim or a serialization failure runs in all, unless
// the DB is told otherwise.
const DefaultTxAttempts = 4

// txPause is the longest pause before the first retry; it doubles for each
// one after.
const txPause = 10 * time.Millisecond

// InTx runs fn in a transaction (READ COMMITTED), committed when fn
// returns nil and rolled back otherwise, and runs it again, whole, when
// PostgreSQL aborted it as a deadlock's victim or a serialization failure
// (SQLSTATE 40P01, 40001), up to the DB's attempts in all, after a pause
// drawn at random so that the transactions that met do not meet again. An
// aborted attempt keeps nothing and its caller has acknowledged nothing,
// so fn runs as if for the first time: it must set its results afresh and
// consume nothing it cannot read again (InTxOnce). After the last attempt
// the error is Unavailable. fn's own errors are returned as they are.
//
// A write takes its locks in one order, so that no two writes wait for
// each other: the project (shared), then the sensor, then the chunks of
// readings it writes, each locked to write it before anything reads it
// (docs/reliability.md).
func (db *DB) InTx(ctx context.Context, fn func(*Tx) error) error {
	return dbError("write", db.inTx(ctx, pgx.TxOptions{}, fn))
}

// InTxOnce is InTx for a write that cannot run twice: one that consumes a
// stream, which is gone once read. An abort is answered Unavailable at
// once, nothing of it stored, for the client to send the stream again.
func (db *DB) InTxOnce(ctx context.Context, fn func(*Tx) error) error {
	return dbError("write", db.runTx(ctx, pgx.TxOptions{}, fn))
}

// InSnapshot runs fn in a read-only REPEATABLE READ transaction: all its
// statements read one snapshot, so that what several of them read agrees.
// A data exception there is Internal, not the client's (readError).
func (db *DB) InSnapshot(ctx context.Context, fn func(*Tx) error) error {
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	return readError("read", db.runTx(ctx, opts, fn))
}

// inTx runs fn in a transaction (runTx), and runs it again as InTx says.
func (db *DB) inTx(ctx context.Context, opts pgx.TxOptions, fn func(*Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := db.runTx(ctx, opts, fn)
		if err == nil || attempt >= db.txAttempts || !retryable(err) {
			return err
		}
		pause := time.Duration(rand.Int64N(int64(txPause << (attempt - 1))))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// retryable tells whether err aborted a transaction that is safe to run
// again as it was: PostgreSQL chose it as a deadlock's victim, or could not
// serialize it.
func retryable(err error) bool {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	return ok && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// runTx runs fn in a transaction of opts on a connection of its own, as
// pgx.BeginTxFunc does, but in a pipelinedTx: its BEGIN goes with its
// first batch of statements, and the statements queued for its commit
// (a batch's rollups, StoreBatchRollups) with its COMMIT.
func (db *DB) runTx(ctx context.Context, opts pgx.TxOptions, fn func(*Tx) error) (err error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release() // which closes it unless the transaction ended
	tx := &pipelinedTx{conn: conn.Conn(), opts: opts}
	defer func() {
		if rollbackErr := tx.Rollback(ctx); rollbackErr != nil && !errors.Is(rollbackErr, pgx.ErrTxClosed) && err == nil {
			err = rollbackErr
		}
	}()
	if err := fn(&Tx{tx: tx, limits: db.limits, pool: db.pool}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// pipelinedTx is a pgx.Tx whose BEGIN costs no round trip of its own: it
// is sent with the transaction's first batch of statements (pgx's
// Batch.BeginTx), or else with its first statement; and whose COMMIT
// carries the statements queued for it (commit), in one round trip. A
// write of readings is then two round trips, three with a COPY: the lock's
// batch, the COPY, and the rollups with the COMMIT. A transaction that
// sent nothing commits without a statement. Savepoints and large objects
// are not used in the service's transactions; Conn is for a transaction
// begun (begin), as a COPY on it would otherwise run outside it.
type pipelinedTx struct {
	conn   *pgx.Conn
	opts   pgx.TxOptions
	tx     pgx.Tx     // nil until begun
	commit *pgx.Batch // sent with the COMMIT; nil for none
	// rollups are the statements of a batch's rollups, sent with the
	// COMMIT too: its hours queued until StoreBatchRollups replaces them.
	rollups *pgx.Batch
	closed  bool
}

var _ pgx.Tx = (*pipelinedTx)(nil)

// begin begins the transaction unless it has begun.
func (t *pipelinedTx) begin(ctx context.Context) error {
	switch {
	case t.closed:
		return pgx.ErrTxClosed
	case t.tx != nil:
		return nil
	}
	tx, err := t.conn.BeginTx(ctx, t.opts)
	if err != nil {
		return err
	}
	t.tx = tx
	return nil
}

// atCommit queues b's statements to be sent with the COMMIT: they run
// last in the transaction, and their errors are the commit's.
func (t *pipelinedTx) atCommit(b *pgx.Batch) {
	if t.commit == nil {
		t.commit = &pgx.Batch{}
	}
	t.commit.QueuedQueries = append(t.commit.QueuedQueries, b.QueuedQueries...)
}

// beginOn begins tx unless it has begun, before its Conn is used.
func beginOn(ctx context.Context, tx pgx.Tx) error {
	if t, ok := tx.(*pipelinedTx); ok {
		return t.begin(ctx)
	}
	return nil
}

func (t *pipelinedTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.tx.Begin(ctx)
}

// Commit sends the statements queued for the commit and COMMIT in one
// round trip. Should one of them fail, the COMMIT is not run, and the
// transaction is rolled back (Rollback, or the pool closes the
// connection).
func (t *pipelinedTx) Commit(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	if t.rollups != nil {
		t.atCommit(t.rollups)
		t.rollups = nil
	}
	if t.commit == nil {
		t.closed = t.tx == nil
		if t.closed {
			return nil
		}
		err := t.tx.Commit(ctx)
		t.closed = true
		return err
	}
	b := t.commit
	if t.tx == nil {
		// Nothing else was sent: the batch is a transaction of its own.
		t.closed = true
		return t.conn.SendBatch(ctx, b).Close()
	}
	b.Queue("commit").Exec(func(tag pgconn.CommandTag) error {
		if tag.String() == "ROLLBACK" {
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	err := t.tx.SendBatch(ctx, b).Close()
	if err == nil || t.conn.PgConn().TxStatus() == 'I' {
		t.closed = true
	}
	return err
}

func (t *pipelinedTx) Rollback(ctx context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	if t.tx == nil {
		return nil
	}
	return t.tx.Rollback(ctx)
}

func (t *pipelinedTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.tx.CopyFrom(ctx, table, columns, src)
}

// SendBatch sends b, and BEGIN first unless the transaction has begun.
func (t *pipelinedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	switch {
	case t.closed:
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed)
	case t.tx != nil:
		return t.tx.SendBatch(ctx, b)
	}
	begun := &pgx.Batch{}
	begun.BeginTx(t.opts)
	begun.QueuedQueries = append(begun.QueuedQueries, b.QueuedQueries...)
	br := t.conn.SendBatch(ctx, begun)
	t.tx = br.Tx()
	if _, err := br.Exec(); err != nil { // BEGIN's result
		t.closed = true // the transaction never began
		return pgx.FailedBatchResults(b, errors.Join(err, br.Close()))
	}
	return br
}

func (t *pipelinedTx) LargeObjects() pgx.LargeObjects { return t.began().LargeObjects() }

func (t *pipelinedTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}

func (t *pipelinedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.tx.Exec(ctx, sql, args...)
}

func (t *pipelinedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return errRows{err}, err
	}
	return t.tx.Query(ctx, sql, args...)
}

func (t *pipelinedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.begin(ctx); err != nil {
		return errRows{err}
	}
	return t.tx.QueryRow(ctx, sql, args...)
}

func (t *pipelinedTx) Conn() *pgx.Conn { return t.began().Conn() }

// began is the transaction begun; using the connection of one not begun
// is a bug of the store's (beginOn).
func (t *pipelinedTx) began() pgx.Tx {
	if t.tx == nil {
		panic("store: the connection of a transaction not begun")
	}
	return t.tx
}

// errRows are the pgx.Rows and pgx.Row of a statement that could not be
// sent: none, and err.
type errRows struct{ err error }

func (errRows) Close()                                       {}
func (r errRows) Err() error                                 { return r.err }
func (errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (errRows) Next() bool                                   { return false }
func (r errRows) Scan(...any) error                          { return r.err }
func (r errRows) Values() ([]any, error)                     { return nil, r.err }
func (errRows) RawValues() [][]byte                          { return nil }
func (errRows) TypeMap() *pgtype.Map                         { return nil }
func (errRows) Conn() *pgx.Conn                              { return nil }

// Backend is the process id of the PostgreSQL backend that tx runs on.
func (tx *Tx) Backend() uint32 { return tx.tx.conn.PgConn().PID() }

// besideWait bounds how long Beside waits for a connection the pool says
// it has to spare: one being opened, or taken meanwhile by another request.
const besideWait = 100 * time.Millisecond

// Beside starts fn in a read-only transaction on a connection of its own
// that reads the same snapshot as tx, which must be InSnapshot's (an
// exported snapshot, as pg_dump's parallel jobs read one), so that one
// read can use two of PostgreSQL's cores. It takes that connection only
// when the pool will have another to spare once it has: a read never
// takes the last, nor waits for one. It says whether it started fn; wait
// waits for fn to end and returns its error. tx must not be used while
// fn runs, other than by the caller's own goroutine.
func (tx *Tx) Beside(ctx context.Context, fn func(*Tx) error) (wait func() error, started bool, err error) {
	if st := tx.pool.Stat(); st.AcquiredConns()+1 >= st.MaxConns() {
		return nil, false, nil
	}
	var snapshot string
	if err := tx.tx.QueryRow(ctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
		return nil, false, readError("export snapshot", err)
	}
	acquireCtx, cancel := context.WithTimeout(ctx, besideWait)
	conn, err := tx.pool.Acquire(acquireCtx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, dbError("beside", ctx.Err())
		}
		return nil, false, nil
	}
	// SET TRANSACTION SNAPSHOT is the first statement, sent with the BEGIN.
	side := &pipelinedTx{conn: conn.Conn(), opts: pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}}
	if _, err := side.Exec(ctx, `SET TRANSACTION SNAPSHOT '`+snapshot+`'`); err != nil {
		side.Rollback(context.WithoutCancel(ctx))
		conn.Release()
		return nil, false, readError("beside", err)
	}
	done := make(chan error, 1)
	go func() {
		defer conn.Release()
		err := fn(&Tx{tx: side, limits: tx.limits, pool: tx.pool})
		// Read-only: nothing to commit but the end of the transaction.
		if rerr := side.Rollback(context.WithoutCancel(ctx)); err == nil && rerr != nil {
			err = readError("beside", rerr)
		}
		done <- err
	}()
	return func() error { return <-done }, true, nil
}

package store

import "context"

// WALPosition is the primary's current write-ahead log position, as
// PostgreSQL prints an LSN ("0/3A2B1C8"): taken after a write, every
// standby that has replayed up to it shows the write.
func (db *DB) WALPosition(ctx context.Context) (string, error) {
	var lsn string
	err := db.pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn)
	return lsn, dbError("wal position", err)
}

// A server that is not in recovery (the primary, or a standby since
// promoted) shows every write. Its replay position is no sign of that: after
// a crash recovery it stays at the last record replayed, long behind.
const caughtUpSQL = `SELECT NOT pg_is_in_recovery() OR coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)`

// CaughtUp tells whether this database, a hot standby, has replayed the log
// up to lsn (as WALPosition prints it; "" for any position). It returns
// Unavailable when the standby does not answer, and Invalid for an lsn
// PostgreSQL cannot read.
func (db *DB) CaughtUp(ctx context.Context, lsn string) (bool, error) {
	if lsn == "" {
		lsn = "0/0"
	}
	var ok bool
	err := db.pool.QueryRow(ctx, caughtUpSQL, lsn).Scan(&ok)
	return ok, dbError("standby position", err)
}

package store

// SetTxAttempts sets how many times a transaction aborted as a deadlock's
// victim or a serialization failure runs in all, so that a test can see
// the first abort.
func (db *DB) SetTxAttempts(n int) { db.txAttempts = n }

// UpsertMax is the largest batch LockSensorWrite stores in its round trip.
const UpsertMax = upsertMax

// HourFirsts is hourFirsts, the hours of a batch LockSensorWrite sends.
var HourFirsts = hourFirsts

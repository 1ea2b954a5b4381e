package main

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestStressPolicy: a write or an edit must be 2xx; a read may also be 429,
// the exports' caps; a 5xx or a transport error never passes.
func TestStressPolicy(t *testing.T) {
	tests := []struct {
		kind   string
		status int
		class  string
		ok     bool
	}{
		{kindForward, 200, "", true},
		{kindFile, 200, "", true},
		{kindDelete, 200, "", true},
		{kindFormulas, 200, "", true},
		{kindAggregate, 200, "", true},
		{kindExport, 429, "", true},
		{kindAggregate, 429, "", true},
		{kindForward, 429, "", false},
		{kindOverwrite, 409, "", false},
		{kindForward, 500, "", false},
		{kindFile, 503, "", false},
		{kindExport, 503, "", false},
		{kindForward, 0, errTimeout, false},
		{kindExport, 0, errReset, false},
	}
	for _, tt := range tests {
		s := stats{}
		ks := s.kind(tt.kind)
		if tt.class != "" {
			ks.errors[tt.class]++
		} else {
			ks.statuses[tt.status]++
		}
		if got := stressPolicy(s).ok(); got != tt.ok {
			t.Errorf("%s answered %d%s: ok = %v, want %v", tt.kind, tt.status, tt.class, got, tt.ok)
		}
	}
}

// TestChunkOutcome reads the warnings TimescaleDB 2.28's compression
// policy sends, as PostgreSQL's log showed them in a stress run.
func TestChunkOutcome(t *testing.T) {
	tests := []struct {
		notice pgconn.Notice
		want   int
	}{
		{pgconn.Notice{Severity: "WARNING", Message: "skipping recompression of chunk _timescaledb_internal._hyper_1_9_chunk due to unique constraints and concurrent DML"}, chunkSkipped},
		{pgconn.Notice{Severity: "WARNING", Message: `converting chunk "_timescaledb_internal._hyper_1_11_chunk" to columnstore failed when recompress columnstore policy is executed`,
			Detail: "Message: (aborting recompression due to concurrent DML on uncompressed data, retrying with next policy run), Detail: ()."}, chunkGaveWay},
		{pgconn.Notice{Severity: "WARNING", Message: `converting chunk "_timescaledb_internal._hyper_1_3_chunk" to columnstore failed when recompress columnstore policy is executed`,
			Detail: "Message: (aborting recompression due to concurrent updates on uncompressed data, retrying with next policy run), Detail: ()."}, chunkGaveWay},
		{pgconn.Notice{Severity: "WARNING", Message: `converting chunk "_timescaledb_internal._hyper_1_3_chunk" to columnstore failed when compress columnstore policy is executed`,
			Detail: "Message: (deadlock detected), Detail: (Process 1 waits for AccessExclusiveLock on relation 2 of database 3; blocked by process 4.)."}, chunkFailed},
		{pgconn.Notice{Severity: "WARNING", Message: "columnstore policy completed with some failures: Failed to convert '1' chunks to columnstore. Successfully converted '2' chunks."}, chunkOther},
		{pgconn.Notice{Severity: "WARNING", Message: `poor compression ratio detected for chunk "_hyper_1_4_chunk"`}, chunkOther},
		{pgconn.Notice{Severity: "NOTICE", Message: "chunk is already converted to columnstore"}, chunkOther},
	}
	for _, tt := range tests {
		if got := chunkOutcome(&tt.notice); got != tt.want {
			t.Errorf("chunkOutcome(%q, %q) = %d, want %d", tt.notice.Message, tt.notice.Detail, got, tt.want)
		}
	}
}

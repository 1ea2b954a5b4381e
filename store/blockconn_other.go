//go:build !linux

package store

import "github.com/jackc/pgx/v5/pgconn"

// netConnKey marks a context whose connections keep net's conn.
type netConnKey struct{}

// blockingDial is dial where blocking reads are not built.
func blockingDial(dial pgconn.DialFunc) pgconn.DialFunc { return dial }

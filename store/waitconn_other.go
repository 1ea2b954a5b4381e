//go:build !linux

package store

import (
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// waitingDial is dial where reads cannot wait in the kernel.
func waitingDial(dial pgconn.DialFunc, _ time.Duration) pgconn.DialFunc { return dial }

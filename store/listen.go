package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AuthChannel is the channel on which PostgreSQL notifies every change of
// what a token speaks for (migration 00061): a token revoked, expiring
// otherwise or rescoped, a membership added, changed or removed, whatever
// the cause (a request, the admin command, a cascade).
const AuthChannel = "readings_auth"

// Listen listens on channel on a connection of its own, outside the pool:
// it calls listening once the LISTEN is in place, then notified for each
// notification, until ctx is done or the connection fails, and returns
// why it stopped. A notification sent before listening was called may be
// missed.
func (db *DB) Listen(ctx context.Context, channel string, listening, notified func()) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	listening()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		notified()
	}
}

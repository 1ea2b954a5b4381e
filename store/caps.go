package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// Limits bound what clients can grow: each cap is the most items of one
// collection its owner may hold. A field of 0 takes DefaultLimits' value.
type Limits struct {
	SensorInputs int // distinct input ids of a sensor without a blueprint
	Projects     int // per organization
	Blueprints   int // per organization
	Members      int // per organization, its pending invitations included
	Invitations  int // pending, per organization; as many finished ones are kept
	Sensors      int // per project
	AlarmLevels  int // per project
	Webhooks     int // per project
	AlarmRules   int // trigger rules per sensor
	Tokens       int // neither revoked nor expired, per user; as many others are kept
	Flags        int // in force and set by people, per sensor; a check's flags are not counted
}

// DefaultLimits are the caps a deployment gets unless it sets others: far
// above what a monitoring project uses, and low enough that no tenant can
// make a list, an alarm's fan-out or an evaluation heavy for the others.
func DefaultLimits() Limits {
	return Limits{
		SensorInputs: DefaultMaxSensorInputs,
		Projects:     1000,
		Blueprints:   1000,
		Members:      1000,
		Invitations:  100,
		Sensors:      10000,
		AlarmLevels:  20,
		Webhooks:     20,
		AlarmRules:   200,
		Tokens:       100,
		Flags:        10000,
	}
}

// withDefaults is l with each field of 0 taken from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	or := func(v, fallback int) int {
		if v > 0 {
			return v
		}
		return fallback
	}
	return Limits{
		SensorInputs: or(l.SensorInputs, d.SensorInputs),
		Projects:     or(l.Projects, d.Projects),
		Blueprints:   or(l.Blueprints, d.Blueprints),
		Members:      or(l.Members, d.Members),
		Invitations:  or(l.Invitations, d.Invitations),
		Sensors:      or(l.Sensors, d.Sensors),
		AlarmLevels:  or(l.AlarmLevels, d.AlarmLevels),
		Webhooks:     or(l.Webhooks, d.Webhooks),
		AlarmRules:   or(l.AlarmRules, d.AlarmRules),
		Tokens:       or(l.Tokens, d.Tokens),
		Flags:        or(l.Flags, d.Flags),
	}
}

// collection is a capped collection: what it is called, who owns it, the
// setting that caps it, and how to count an owner's items.
type collection struct {
	name    string // in the error's details.cap, and the key of its lock
	owner   string // what holds the items, in the message
	items   string // what they are, in the message
	setting string // the environment variable that sets the cap
	free    string // how to make room, in the message
	max     func(Limits) int
	// count selects a row for each item of owner $1 up to $2 of them,
	// so that counting a full collection costs its cap, not its size.
	count string
	// prune, when set, deletes the finished items of owner $1 (revoked,
	// expired) but the newest $2, which the cap does not count but a list
	// shows: history stays bounded however often items come and go.
	prune string
}

var (
	projectsCap = collection{
		name: "projects", owner: "organization", items: "projects", setting: "MAX_PROJECTS", free: "delete one",
		max:   func(l Limits) int { return l.Projects },
		count: `SELECT FROM projects WHERE org_id = $1 LIMIT $2`,
	}
	blueprintsCap = collection{
		name: "blueprints", owner: "organization", items: "blueprints", setting: "MAX_BLUEPRINTS", free: "delete one",
		max:   func(l Limits) int { return l.Blueprints },
		count: `SELECT FROM blueprints WHERE org_id = $1 LIMIT $2`,
	}
	// An invitation holds its member's place until it is accepted (the
	// member then takes it), revoked or expired, so accepting one never
	// takes an organization past its cap.
	membersCap = collection{
		name: "members", owner: "organization", items: "members and pending invitations", setting: "MAX_MEMBERS",
		free: "remove a member or revoke an invitation",
		max:  func(l Limits) int { return l.Members },
		count: `(SELECT FROM memberships WHERE org_id = $1 LIMIT $2)
UNION ALL (SELECT FROM invitations WHERE org_id = $1 AND ` + pendingInvitation + ` LIMIT $2)`,
	}
	invitationsCap = collection{
		name: "invitations", owner: "organization", items: "pending invitations", setting: "MAX_INVITATIONS", free: "revoke one",
		max:   func(l Limits) int { return l.Invitations },
		count: `SELECT FROM invitations WHERE org_id = $1 AND ` + pendingInvitation + ` LIMIT $2`,
		prune: `DELETE FROM invitations WHERE id IN (
    SELECT id FROM invitations WHERE org_id = $1 AND NOT (` + pendingInvitation + `) ORDER BY id DESC OFFSET $2)`,
	}
	sensorsCap = collection{
		name: "sensors", owner: "project", items: "sensors", setting: "MAX_SENSORS", free: "delete one",
		max:   func(l Limits) int { return l.Sensors },
		count: `SELECT FROM sensors WHERE project_id = $1 LIMIT $2`,
	}
	alarmLevelsCap = collection{
		name: "alarm_levels", owner: "project", items: "alarm levels", setting: "MAX_ALARM_LEVELS", free: "delete one",
		max:   func(l Limits) int { return l.AlarmLevels },
		count: `SELECT FROM alarm_levels WHERE project_id = $1 LIMIT $2`,
	}
	webhooksCap = collection{
		name: "webhooks", owner: "project", items: "webhooks", setting: "MAX_WEBHOOKS", free: "delete one",
		max:   func(l Limits) int { return l.Webhooks },
		count: `SELECT FROM webhooks WHERE project_id = $1 LIMIT $2`,
	}
	alarmRulesCap = collection{
		name: "alarm_rules", owner: "sensor", items: "alarm rules", setting: "MAX_ALARM_RULES", free: "delete one",
		max:   func(l Limits) int { return l.AlarmRules },
		count: `SELECT FROM alarm_rules WHERE sensor_id = $1 LIMIT $2`,
	}
	// A check's flags are not counted: checks flag and never refuse. Nor
	// are cleared flags, kept as history for reads as of a past instant;
	// clearing part of a flag's range splits it, past the cap if need be,
	// since a clearing is never refused.
	flagsCap = collection{
		name: "flags", owner: "sensor", items: "flags in force set by people", setting: "MAX_FLAGS", free: "clear some",
		max:   func(l Limits) int { return l.Flags },
		count: `SELECT FROM reading_flags WHERE sensor_id = $1 AND cleared_at IS NULL AND check_kind IS NULL LIMIT $2`,
	}
	tokensCap = collection{
		name: "tokens", owner: "user", items: "live tokens", setting: "MAX_TOKENS", free: "revoke one",
		max:   func(l Limits) int { return l.Tokens },
		count: `SELECT FROM api_tokens WHERE user_id = $1 AND ` + liveToken + ` LIMIT $2`,
		prune: `DELETE FROM api_tokens WHERE id IN (
    SELECT id FROM api_tokens WHERE user_id = $1 AND NOT (` + liveToken + `) ORDER BY id DESC OFFSET $2)`,
	}
)

const (
	pendingInvitation = `accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()`
	liveToken         = `revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`
)

// makeRoom returns Conflict, naming the cap, when ownerID's collection c
// is full, so that the caller adds nothing; otherwise it prunes c's
// history, when c has one, to as many finished items as the cap. It first
// takes, until tx
// ends, a lock that every creator of c's items under ownerID takes: two
// creators at once take turns, and the second counts the first's item.
// The lock is an advisory one, not the owner's row, which its writers hold
// in share mode (ingest holds its project's): locking that row against
// itself would make a create wait for every batch in flight.
func makeRoom(ctx context.Context, tx pgx.Tx, limits Limits, c collection, ownerID int64) error {
	// Its own statement: a statement that waited for the lock would count
	// with the snapshot it took before, missing the item just committed.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, $2))`, c.name, ownerID); err != nil {
		return err
	}
	limit := c.max(limits)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM (`+c.count+`) items`, ownerID, limit).Scan(&n); err != nil {
		return err
	}
	if n >= limit {
		return capReached(c, ownerID, limit)
	}
	if c.prune != "" {
		if _, err := tx.Exec(ctx, c.prune, ownerID, limit); err != nil {
			return err
		}
	}
	return nil
}

// capReached is the one answer to an item past a cap.
func capReached(c collection, ownerID int64, limit int) error {
	return &apperr.Error{
		Code: apperr.Conflict,
		Message: fmt.Sprintf("%s %d has the most %s it may have, %d (%s); %s first",
			c.owner, ownerID, c.items, limit, c.setting, c.free),
		Details: map[string]any{"cap": c.name, "limit": limit},
	}
}

package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/alarms"
)

// AlarmChange is a change of a target's level that readings or an edit
// made, as the domain decided it and ApplyAlarms writes it: From and To
// are ranks, 0 at rest. A Late change comes from a
// reading older than the sensor's newest: it is recorded, and changes no
// current alarm. A Folded change moves the current alarm as any other
// but raises no event of its own: it is one of the Coalesced changes that
// the target's next event stands for (alarms.Coalesce).
type AlarmChange struct {
	TargetID  int64
	Kind      string
	From, To  int
	Late      bool
	At        time.Time // the reading's datetime
	Value     float64
	Folded    bool
	Coalesced int
}

// SensorRules returns the sensor's alarm rules, ordered by target, then
// id, as an evaluation takes them, with their states, their target's
// current level and the stamps of what the rate rules keep.
func (tx *Tx) SensorRules(ctx context.Context, sensorID int64) ([]AlarmRule, error) {
	rows, _ := tx.tx.Query(ctx, sensorRulesSQL, sensorID)
	rules, err := pgx.CollectRows(rows, pgx.RowToStructByName[AlarmRule])
	return rules, dbError("sensor rules", err)
}

// LatestReading returns the sensor's newest reading, nil when it has none.
func (tx *Tx) LatestReading(ctx context.Context, sensorID int64) (*Reading, error) {
	var r Reading
	err := tx.tx.QueryRow(ctx, `SELECT datetime, input_ids, vals FROM sensor_latest WHERE sensor_id = $1`, sensorID).
		Scan(&r.Time, &r.InputIDs, &r.Values)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return &r, dbError("latest reading", err)
}

// ApplyAlarms writes what an evaluation of the sensor's rules decided: the
// rules' states (those that differ from before, rule by rule; all of them
// when before is nil) and the stamps of what rate rules keep (where
// KeptChanged), the
// current alarms that changes leave, and the
// events that events raise (those not Folded), in order, in one round trip
// however many changes a write makes, since a noisy target can change
// level at many of a write's readings.
func (tx *Tx) ApplyAlarms(ctx context.Context, sensor Sensor, rules []AlarmRule, before []alarms.State, changes, events []AlarmChange) error {
	write := applyAlarms(sensor, rules, before, changes, events)
	if write.Len() == 0 {
		return nil
	}
	return dbError("apply alarms", tx.tx.SendBatch(ctx, write).Close())
}

// ApplyAlarmsAtCommit is ApplyAlarms, its statements sent with the
// transaction's COMMIT, in the same round trip: for the last thing a
// write of readings decides, which nothing after it in the transaction
// reads. Their errors are the commit's.
func (tx *Tx) ApplyAlarmsAtCommit(sensor Sensor, rules []AlarmRule, before []alarms.State, changes, events []AlarmChange) {
	if write := applyAlarms(sensor, rules, before, changes, events); write.Len() > 0 {
		tx.tx.atCommit(write)
	}
}

// applyAlarms is the batch of statements of ApplyAlarms.
func applyAlarms(sensor Sensor, rules []AlarmRule, before []alarms.State, changes, events []AlarmChange) *pgx.Batch {
	var (
		ids     []int64
		active  []bool
		streaks []int32
		keep    []bool
		stamps  []int64
	)
	for i, r := range rules {
		if before == nil || before[i] != r.State || r.KeptChanged {
			ids, active, streaks = append(ids, r.ID), append(active, r.Active), append(streaks, int32(r.Streak))
			keep, stamps = append(keep, r.KeptChanged), append(stamps, r.RateStamp)
		}
	}
	write := &pgx.Batch{}
	if len(ids) > 0 {
		write.Queue(updateRulesSQL, ids, active, streaks, keep, stamps)
	}
	queueAlarms(write, sensor, rules, changes)
	queueEvents(write, sensor, rules, events)
	if write.Len() == 0 {
		return write
	}
	return withKeyPlans(write)
}

// withKeyPlans is b with its statements run with their generic plans
// (genericPlansSQL) and without sequential scans, and the settings put
// back after them. Each of ApplyAlarms' statements finds its rows by key
// whatever the batch, yet PostgreSQL made a custom plan of each at every
// call: planning the rules' UPDATE cost more than running it
// (pg_stat_statements over row 11e of make bench). A generic plan lasts
// as long as the connection's prepared statement, and one made while
// alarm_rules held a few pages, as in a new database, scanned the whole
// table once it had grown (206 buffers a call where its key reads 5).
func withKeyPlans(b *pgx.Batch) *pgx.Batch {
	w := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, b.Len()+4)}
	w.Queue(genericPlansSQL)
	w.Queue(`SET LOCAL enable_seqscan = off`)
	w.QueuedQueries = append(w.QueuedQueries, b.QueuedQueries...)
	w.Queue(`RESET enable_seqscan`)
	w.Queue(resetPlansSQL)
	return w
}

// updateRulesSQL writes the states of rules that changed and the stamps
// of what rate rules keep, clearing what releases before kept of the
// window itself (rate_kept and its parts): a replica of such a release
// reads the stamp with it, and must not find an old window beside a new
// stamp. The rules are found by their keys (id = ANY), whatever the plan
// joins them with: without it, the generic plan without sequential scans
// (withKeyPlans) merged the whole primary key with the arrays.
const updateRulesSQL = `UPDATE alarm_rules r SET active = u.active, streak = u.streak,
    rate_kept = CASE WHEN u.keep THEN NULL ELSE r.rate_kept END,
    rate_kept_stamp = CASE WHEN u.keep THEN nullif(u.stamp, 0) ELSE r.rate_kept_stamp END
FROM unnest($1::bigint[], $2::boolean[], $3::int[], $4::boolean[], $5::bigint[]) AS u(id, active, streak, keep, stamp)
WHERE r.id = ANY($1) AND r.id = u.id AND ((r.active, r.streak) IS DISTINCT FROM (u.active, u.streak) OR u.keep)`

// changeLevel is the key of the target of c and the level its event
// names: the one reached, or for a clearing the one left.
func changeLevel(rules []AlarmRule, c AlarmChange) (string, levelRef) {
	rank := c.To
	if rank == 0 {
		rank = c.From
	}
	return targetLevel(rules, c.TargetID, rank)
}

// queueAlarms queues the statements that write the current alarms that
// changes leave.
func queueAlarms(write *pgx.Batch, sensor Sensor, rules []AlarmRule, changes []AlarmChange) {
	targets := map[int64]*targetOutcome{}
	var order []int64 // targets in the order of their first change
	for _, c := range changes {
		if c.Late {
			continue
		}
		key, level := changeLevel(rules, c)
		t := targets[c.TargetID]
		if t == nil {
			t = &targetOutcome{}
			targets[c.TargetID] = t
			order = append(order, c.TargetID)
		}
		t.last, t.key, t.level = c, key, level
		t.cleared = t.cleared || c.To == 0
		t.reask = t.reask || c.To > c.From
	}
	var cleared []int64
	var raised raisedAlarms
	for _, id := range order {
		t := targets[id]
		if t.cleared {
			cleared = append(cleared, id)
		}
		if t.last.To > 0 {
			raised.add(id, t)
		}
	}
	if len(cleared) > 0 {
		// A target cleared within the batch has a new alarm if it rose
		// again, with a new id, as it would have batch by batch.
		write.Queue(`DELETE FROM alarms WHERE sensor_id = $1 AND target_id = ANY($2)`, sensor.ID, cleared)
	}
	if len(raised.targets) > 0 {
		// An escalation asks for a new acknowledgement; a de-escalation
		// keeps the one given.
		write.Queue(`
WITH u AS (
    SELECT * FROM unnest($3::bigint[], $4::text[], $5::bigint[], $6::timestamptz[], $7::float8[], $8::boolean[])
        AS u(target_id, target_key, level_id, since, value, reask)
)
INSERT INTO alarms AS a (project_id, sensor_id, target_id, target_key, level_id, since, value)
SELECT $1, $2, target_id, target_key, level_id, since, value FROM u
ON CONFLICT (sensor_id, target_id) DO UPDATE SET level_id = EXCLUDED.level_id, since = EXCLUDED.since, value = EXCLUDED.value,
    acknowledged_at = CASE WHEN (SELECT reask FROM u WHERE u.target_id = EXCLUDED.target_id) THEN NULL ELSE a.acknowledged_at END,
    acknowledged_by = CASE WHEN (SELECT reask FROM u WHERE u.target_id = EXCLUDED.target_id) THEN NULL ELSE a.acknowledged_by END,
    note = CASE WHEN (SELECT reask FROM u WHERE u.target_id = EXCLUDED.target_id) THEN '' ELSE a.note END`,
			sensor.ProjectID, sensor.ID, raised.targets, raised.keys, raised.levels, raised.since, raised.values, raised.reask)
	}
}

// queueEvents queues the statement that appends the events that changes
// raise, in order: those not folded into another.
func queueEvents(write *pgx.Batch, sensor Sensor, rules []AlarmRule, changes []AlarmChange) {
	var events eventColumns
	for _, c := range changes {
		if !c.Folded {
			key, level := changeLevel(rules, c)
			events.add(key, c, level)
		}
	}
	if len(events.keys) == 0 {
		return
	}
	write.Queue(`
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at, coalesced)
SELECT $1, $2, target_key, kind, level_id, level_name, value, reading_at, coalesced
FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::float8[], $8::timestamptz[], $9::int[]) WITH ORDINALITY
    AS u(target_key, kind, level_id, level_name, value, reading_at, coalesced, n)
ORDER BY n`, sensor.ProjectID, sensor.ID, events.keys, events.kinds, events.levelIDs, events.levelNames, events.values, events.at, events.coalesced)
}

// targetOutcome is what a batch's changes leave of a target's alarm.
type targetOutcome struct {
	last    AlarmChange // the last change: the alarm's level, since and value
	key     string
	level   levelRef
	cleared bool // it came to rest on the way
	reask   bool // it rose on the way: a new acknowledgement is needed
}

// raisedAlarms are the alarms a batch leaves raised, as arrays.
type raisedAlarms struct {
	targets []int64
	levels  []*int64
	keys    []string
	since   []time.Time
	values  []float64
	reask   []bool
}

func (a *raisedAlarms) add(target int64, t *targetOutcome) {
	a.targets = append(a.targets, target)
	a.keys = append(a.keys, t.key)
	a.levels = append(a.levels, t.level.id)
	a.since = append(a.since, t.last.At)
	a.values = append(a.values, t.last.Value)
	a.reask = append(a.reask, t.reask)
}

// eventColumns are a batch's events, in order, as arrays.
type eventColumns struct {
	keys, kinds, levelNames []string
	levelIDs                []*int64
	values                  []float64
	at                      []time.Time
	coalesced               []int32
}

func (e *eventColumns) add(key string, c AlarmChange, level levelRef) {
	e.keys = append(e.keys, key)
	e.kinds = append(e.kinds, c.Kind)
	e.levelIDs = append(e.levelIDs, level.id)
	e.levelNames = append(e.levelNames, level.name)
	e.values = append(e.values, c.Value)
	e.at = append(e.at, c.At)
	e.coalesced = append(e.coalesced, int32(c.Coalesced))
}

type levelRef struct {
	id   *int64
	name string
}

// targetLevel is the key of target and the level of its rules at rank.
func targetLevel(rules []AlarmRule, target int64, rank int) (string, levelRef) {
	key := ""
	for i := range rules {
		r := &rules[i] // not a copy: the level's id is taken by address
		if r.TargetID != target {
			continue
		}
		key = r.TargetKey
		if r.Rank == rank {
			return key, levelRef{id: &r.LevelID, name: r.LevelName}
		}
	}
	return key, levelRef{}
}

// ClearUnruled clears the alarms of the sensor's targets that have none of
// rules, with an event each; the overdue alarm (target 0) is the
// background check's.
func (tx *Tx) ClearUnruled(ctx context.Context, sensor Sensor, rules []AlarmRule) error {
	targets := make([]int64, 0, len(rules))
	for _, r := range rules {
		targets = append(targets, r.TargetID)
	}
	_, err := tx.tx.Exec(ctx, `
WITH gone AS (
    DELETE FROM alarms WHERE sensor_id = $1 AND target_id <> 0 AND target_id <> ALL($2) RETURNING project_id, sensor_id, target_key, level_id, value, since
)
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at)
SELECT g.project_id, g.sensor_id, g.target_key, 'cleared', g.level_id, l.name, g.value, g.since
FROM gone g JOIN alarm_levels l ON l.id = g.level_id`, sensor.ID, targets)
	return dbError("clear unruled alarms", err)
}

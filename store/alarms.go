package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// AlarmLevel is one of a project's alarm levels; a higher rank is more
// severe.
type AlarmLevel struct {
	ID        int64  `db:"id"`
	ProjectID int64  `db:"project_id"`
	Name      string `db:"name"`
	Rank      int    `db:"rank"`
	Colour    string `db:"colour"`
}

// AlarmLevelPatch holds the changes of a level; nil fields change nothing.
type AlarmLevelPatch struct {
	Name   *string
	Rank   *int
	Colour *string
}

// AlarmRule raises its level when its target, an input or output of its
// sensor, goes above or below the threshold; Active and Streak are the
// state it carries from reading to reading (alarms.State).
type AlarmRule struct {
	ID          int64     `db:"id"`
	SensorID    int64     `db:"sensor_id"`
	TargetID    int64     `db:"target_id"`
	TargetKey   string    `db:"target_key"`
	LevelID     int64     `db:"level_id"`
	Rank        int       `db:"rank"`
	LevelName   string    `db:"level_name"`
	Direction   string    `db:"direction"` // above or below
	Threshold   float64   `db:"threshold"`
	Deadband    float64   `db:"deadband"`
	Persistence int       `db:"persistence"`
	Active      bool      `db:"active"`
	Streak      int       `db:"streak"`
	CreatedAt   time.Time `db:"created_at"`
	// TargetRank is the rank of the target's current alarm, 0 at rest: the
	// level an evaluation starts from.
	TargetRank int `db:"target_rank"`
}

// AlarmRuleSpec is a rule as a client writes it.
type AlarmRuleSpec struct {
	TargetKey   string
	Level       string // the level's name
	Direction   string
	Threshold   float64
	Deadband    float64
	Persistence int
}

// Alarm is the current alarm of a target not at rest.
type Alarm struct {
	ID             int64      `db:"id"`
	ProjectID      int64      `db:"project_id"`
	SensorID       int64      `db:"sensor_id"`
	TargetID       int64      `db:"target_id"`
	TargetKey      string     `db:"target_key"`
	LevelID        int64      `db:"level_id"`
	LevelName      string     `db:"level_name"`
	Rank           int        `db:"rank"`
	Colour         string     `db:"colour"`
	Since          time.Time  `db:"since"` // the datetime of the reading that raised the level
	Value          float64    `db:"value"`
	AcknowledgedAt *time.Time `db:"acknowledged_at"`
	AcknowledgedBy *int64     `db:"acknowledged_by"`
	Note           string     `db:"note"`
}

// AlarmEvent is an entry of a project's alarm history.
type AlarmEvent struct {
	ID        int64      `db:"id"`
	ProjectID int64      `db:"project_id"`
	SensorID  int64      `db:"sensor_id"`
	TargetKey string     `db:"target_key"`
	Kind      string     `db:"kind"` // triggered, escalated, de-escalated, cleared, acknowledged, late
	LevelID   *int64     `db:"level_id"`
	LevelName string     `db:"level_name"`
	Value     *float64   `db:"value"`
	ReadingAt *time.Time `db:"reading_at"`
	UserID    *int64     `db:"user_id"`
	Note      string     `db:"note"`
	CreatedAt time.Time  `db:"created_at"`
}

// AlarmEventQuery selects events of a project; zero fields select all.
type AlarmEventQuery struct {
	SensorID, LevelID int64
	From, To          time.Time // of the event's creation, inclusive
	Desc              bool      // newest first
	After             int64     // the cursor: events past this id in the order, 0 from the start
	Limit             int
}

// AlarmChange is a change of a target's level that readings or an edit
// made: From and To are ranks, 0 at rest. A Late change comes from a
// reading older than the sensor's newest: it is recorded, and changes no
// current alarm.
type AlarmChange struct {
	TargetID int64
	Kind     string
	From, To int
	Late     bool
	At       time.Time // the reading's datetime
	Value    float64
}

// AlarmEvaluator decides what readings and edits do to a sensor's rules.
// The server provides it, so that the store knows no formulas; it runs
// inside the store's transaction, under the sensor's lock, and reads the
// sources of linked inputs through links, in that transaction: what is
// stored by then is what it sees.
type AlarmEvaluator interface {
	// Evaluate steps rules, ordered by target, with readings, ordered and
	// one per instant, updating their Active and Streak. newest is the
	// datetime of the sensor's newest reading before them, if it had one.
	Evaluate(ctx context.Context, links LinkReader, sensor Sensor, rules []AlarmRule, readings []Reading, newest *time.Time) ([]AlarmChange, error)
	// Recheck rechecks rules against the sensor's newest reading after an
	// edit.
	Recheck(ctx context.Context, links LinkReader, sensor Sensor, rules []AlarmRule, newest Reading) ([]AlarmChange, error)
}

// SetAlarmEvaluator makes every write of readings, and every edit of
// rules and formulas, evaluate the sensor's alarm rules in its
// transaction. It is called once, before the DB serves.
func (db *DB) SetAlarmEvaluator(e AlarmEvaluator) { db.alarms = e }

const alarmLevelColumns = `id, project_id, name, rank, colour`

// ListAlarmLevels returns the project's levels by rank. It returns
// NotFound for a project not in orgID.
func (db *DB) ListAlarmLevels(ctx context.Context, orgID, projectID int64) ([]AlarmLevel, error) {
	if _, err := db.GetProject(ctx, orgID, projectID); err != nil {
		return nil, err
	}
	rows, _ := db.pool.Query(ctx, `SELECT `+alarmLevelColumns+` FROM alarm_levels WHERE project_id = $1 ORDER BY rank`, projectID)
	levels, err := pgx.CollectRows(rows, pgx.RowToStructByName[AlarmLevel])
	return levels, dbError("list alarm levels", err)
}

// CreateAlarmLevel adds a level to the project. It returns NotFound;
// Invalid for a name, rank or colour the table refuses; Conflict for a
// name or rank the project has already, or an archived project.
func (db *DB) CreateAlarmLevel(ctx context.Context, orgID, projectID int64, l AlarmLevel) (AlarmLevel, error) {
	var level AlarmLevel
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `INSERT INTO alarm_levels (project_id, name, rank, colour) VALUES ($1, $2, $3, $4) RETURNING `+alarmLevelColumns,
			projectID, l.Name, l.Rank, l.Colour)
		var err error
		level, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AlarmLevel])
		return err
	})
	return level, dbError("create alarm level", err)
}

// UpdateAlarmLevel applies patch to the level. A rank orders the levels
// of the rules in force, so it changes only while no rule uses the level.
// It returns NotFound; Invalid as CreateAlarmLevel; Conflict for a name or
// rank taken, a rank change of a level in use, or an archived project.
func (db *DB) UpdateAlarmLevel(ctx context.Context, orgID, projectID, levelID int64, patch AlarmLevelPatch) (AlarmLevel, error) {
	var level AlarmLevel
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+alarmLevelColumns+` FROM alarm_levels WHERE id = $1 AND project_id = $2 FOR UPDATE`, levelID, projectID)
		current, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AlarmLevel])
		if err != nil {
			return notFound("update alarm level", err, "alarm level")
		}
		if patch.Rank != nil && *patch.Rank != current.Rank {
			if err := levelUnused(ctx, tx, levelID, "change the rank of"); err != nil {
				return err
			}
		}
		rows, _ = tx.Query(ctx, `
UPDATE alarm_levels SET name = $2, rank = $3, colour = $4 WHERE id = $1 RETURNING `+alarmLevelColumns,
			levelID, coalesce(patch.Name, current.Name), coalesce(patch.Rank, current.Rank), coalesce(patch.Colour, current.Colour))
		level, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AlarmLevel])
		return err
	})
	return level, dbError("update alarm level", err)
}

// DeleteAlarmLevel deletes the level. It returns NotFound, and Conflict
// while rules or current alarms use it or when the project is archived.
func (db *DB) DeleteAlarmLevel(ctx context.Context, orgID, projectID, levelID int64) error {
	return dbError("delete alarm level", pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		var id int64
		err := tx.QueryRow(ctx, `SELECT id FROM alarm_levels WHERE id = $1 AND project_id = $2 FOR UPDATE`, levelID, projectID).Scan(&id)
		if err != nil {
			return notFound("delete alarm level", err, "alarm level")
		}
		if err := levelUnused(ctx, tx, levelID, "delete"); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM alarm_levels WHERE id = $1`, levelID)
		return err
	}))
}

// levelUnused returns Conflict when rules or alarms use the level, whose
// row the caller has locked: rules are written under a share lock of it.
func levelUnused(ctx context.Context, tx pgx.Tx, levelID int64, what string) error {
	var rules int
	err := tx.QueryRow(ctx, `
SELECT (SELECT count(*) FROM alarm_rules WHERE level_id = $1) + (SELECT count(*) FROM alarm_overdue WHERE level_id = $1)
     + (SELECT count(*) FROM alarms WHERE level_id = $1)`, levelID).Scan(&rules)
	if err != nil {
		return err
	}
	if rules > 0 {
		return &apperr.Error{
			Code:    apperr.Conflict,
			Message: fmt.Sprintf("cannot %s alarm level %d: %d rules or alarms use it; move or delete them first", what, levelID, rules),
			Details: map[string]any{"level_id": levelID},
		}
	}
	return nil
}

const alarmRuleColumns = `r.id, r.sensor_id, r.target_id, r.target_key, r.level_id, l.rank, l.name AS level_name,
r.direction, r.threshold, r.deadband, r.persistence, r.active, r.streak, r.created_at,
coalesce((SELECT al.rank FROM alarms a JOIN alarm_levels al ON al.id = a.level_id WHERE a.sensor_id = r.sensor_id AND a.target_id = r.target_id), 0) AS target_rank`

// sensorRulesSQL is a sensor's rules, ordered by target as evaluators
// take them.
const sensorRulesSQL = `SELECT ` + alarmRuleColumns + ` FROM alarm_rules r JOIN alarm_levels l ON l.id = r.level_id
WHERE r.sensor_id = $1 ORDER BY r.target_id, r.id`

// ListAlarmRules returns the sensor's trigger rules, by target, and its
// overdue rule, nil when it has none. It returns NotFound.
func (db *DB) ListAlarmRules(ctx context.Context, key SensorKey) ([]AlarmRule, *OverdueRule, error) {
	if _, err := db.GetSensor(ctx, key); err != nil {
		return nil, nil, err
	}
	rows, _ := db.pool.Query(ctx, sensorRulesSQL, key.SensorID)
	rules, err := pgx.CollectRows(rows, pgx.RowToStructByName[AlarmRule])
	if err != nil {
		return nil, nil, dbError("list alarm rules", err)
	}
	overdue, err := overdueRule(ctx, db.pool, key.SensorID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return rules, nil, nil
	case err != nil:
		return nil, nil, dbError("list alarm rules", err)
	}
	return rules, &overdue, nil
}

// CreateAlarmRule adds a rule to the sensor and rechecks its alarms
// against its newest reading, in one transaction. It returns NotFound;
// Invalid for a target that is not one of the sensor's inputs or outputs,
// a level that is not the project's, or values the table refuses; and Conflict
// when the project is archived.
func (db *DB) CreateAlarmRule(ctx context.Context, key SensorKey, spec AlarmRuleSpec) (AlarmRule, error) {
	var rule AlarmRule
	err := db.editRules(ctx, key, func(tx pgx.Tx, sensor Sensor) error {
		targetID, levelID, err := ruleTarget(ctx, tx, sensor, spec)
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
INSERT INTO alarm_rules (sensor_id, target_id, target_key, level_id, direction, threshold, deadband, persistence)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			sensor.ID, targetID, spec.TargetKey, levelID, spec.Direction, spec.Threshold, spec.Deadband, spec.Persistence).Scan(&rule.ID)
	})
	if err != nil {
		return AlarmRule{}, dbError("create alarm rule", err)
	}
	return db.getRule(ctx, rule.ID)
}

// UpdateAlarmRule replaces the rule, whose state starts over, and
// rechecks the sensor's alarms at once. It returns NotFound, and Invalid
// and Conflict as CreateAlarmRule.
func (db *DB) UpdateAlarmRule(ctx context.Context, key SensorKey, ruleID int64, spec AlarmRuleSpec) (AlarmRule, error) {
	err := db.editRules(ctx, key, func(tx pgx.Tx, sensor Sensor) error {
		targetID, levelID, err := ruleTarget(ctx, tx, sensor, spec)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
UPDATE alarm_rules SET target_id = $3, target_key = $4, level_id = $5, direction = $6, threshold = $7, deadband = $8, persistence = $9,
    active = false, streak = 0
WHERE id = $1 AND sensor_id = $2`,
			ruleID, sensor.ID, targetID, spec.TargetKey, levelID, spec.Direction, spec.Threshold, spec.Deadband, spec.Persistence)
		if err == nil && tag.RowsAffected() == 0 {
			return notFound("update alarm rule", pgx.ErrNoRows, "alarm rule")
		}
		return err
	})
	if err != nil {
		return AlarmRule{}, dbError("update alarm rule", err)
	}
	return db.getRule(ctx, ruleID)
}

// DeleteAlarmRule deletes the rule and rechecks the sensor's alarms: a
// target left without rules is at rest. It returns NotFound, and Conflict
// when the project is archived.
func (db *DB) DeleteAlarmRule(ctx context.Context, key SensorKey, ruleID int64) error {
	return dbError("delete alarm rule", db.editRules(ctx, key, func(tx pgx.Tx, sensor Sensor) error {
		tag, err := tx.Exec(ctx, `DELETE FROM alarm_rules WHERE id = $1 AND sensor_id = $2`, ruleID, sensor.ID)
		if err == nil && tag.RowsAffected() == 0 {
			return notFound("delete alarm rule", pgx.ErrNoRows, "alarm rule")
		}
		return err
	}))
}

func (db *DB) getRule(ctx context.Context, ruleID int64) (AlarmRule, error) {
	rows, _ := db.pool.Query(ctx, `SELECT `+alarmRuleColumns+` FROM alarm_rules r JOIN alarm_levels l ON l.id = r.level_id WHERE r.id = $1`, ruleID)
	rule, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AlarmRule])
	return rule, notFound("get alarm rule", err, "alarm rule")
}

// editRules runs edit on the sensor's rules, under the project's and the
// sensor's locks as ingest takes them, then rechecks the sensor's alarms
// in the same transaction.
func (db *DB) editRules(ctx context.Context, key SensorKey, edit func(pgx.Tx, Sensor) error) error {
	return pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, key.OrgID, key.ProjectID); err != nil {
			return err
		}
		sensor, err := lockSensor(ctx, tx, key)
		if err != nil {
			return err
		}
		if err := edit(tx, sensor); err != nil {
			return err
		}
		return db.recheckAlarms(ctx, tx, sensor)
	})
}

// ruleTarget returns the ids of spec's target and level, after checking
// that the target is one of the sensor's inputs or outputs and the level
// one of the project's (which it locks against deletion).
func ruleTarget(ctx context.Context, tx pgx.Tx, sensor Sensor, spec AlarmRuleSpec) (targetID, levelID int64, err error) {
	if levelID, err = projectLevel(ctx, tx, sensor.ProjectID, spec.Level); err != nil {
		return 0, 0, err
	}
	var keys []string
	if inst := sensor.Instance; inst != nil {
		for _, in := range inst.Inputs {
			if in.Key == spec.TargetKey {
				return in.ID, levelID, nil
			}
			keys = append(keys, in.Key)
		}
		for _, o := range inst.Outputs {
			if o.Key == spec.TargetKey {
				return o.ID, levelID, nil
			}
			keys = append(keys, o.Key)
		}
	}
	return 0, 0, &apperr.Error{Code: apperr.Invalid,
		Message: fmt.Sprintf("target %q is not one of the sensor's inputs or outputs (%s)", spec.TargetKey, strings.Join(keys, ", ")),
		Details: map[string]any{"field": "target"}}
}

// projectLevel returns the id of the project's level of that name, and
// locks it against deletion. It returns Invalid when there is none.
func projectLevel(ctx context.Context, tx pgx.Tx, projectID int64, name string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM alarm_levels WHERE name = $1 AND project_id = $2 FOR SHARE`, name, projectID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("level %q is not one of the project's alarm levels", name),
			Details: map[string]any{"field": "level"}}
	}
	return id, err
}

// evaluateAlarms evaluates the sensor's rules with a batch of readings,
// ordered and one per instant, inside the batch's transaction and before
// sensor_latest takes the batch's newest, and returns how many events it
// raised.
func (db *DB) evaluateAlarms(ctx context.Context, tx pgx.Tx, sensor Sensor, readings []Reading) (int, error) {
	if db.alarms == nil {
		return 0, nil
	}
	// The rules and the newest reading's datetime in one round trip, and a
	// sensor without rules pays for no more: a batch of readings pays for
	// its alarms in two, this and applyAlarms'.
	rows, _ := tx.Query(ctx, `SELECT r.*, (SELECT datetime FROM sensor_latest WHERE sensor_id = $1) AS newest
FROM (`+sensorRulesSQL+`) r ORDER BY r.target_id, r.id`, sensor.ID)
	withNewest, err := pgx.CollectRows(rows, pgx.RowToStructByName[struct {
		AlarmRule
		Newest *time.Time `db:"newest"`
	}])
	if err != nil || len(withNewest) == 0 {
		return 0, err
	}
	rules := make([]AlarmRule, len(withNewest))
	for i, r := range withNewest {
		rules[i] = r.AlarmRule
	}
	newest := withNewest[0].Newest
	before := ruleStates(rules)
	changes, err := db.alarms.Evaluate(ctx, txLinks{tx}, sensor, rules, readings, newest)
	if err != nil {
		return 0, err
	}
	return len(changes), applyAlarms(ctx, tx, sensor, rules, before, changes)
}

// recheckAlarms rechecks the sensor's rules against its newest reading,
// after an edit or a delete that took the newest, in that write's
// transaction; the sensor is locked.
func (db *DB) recheckAlarms(ctx context.Context, tx pgx.Tx, sensor Sensor) error {
	if db.alarms == nil {
		return nil
	}
	rules, err := sensorRules(ctx, tx, sensor.ID)
	if err != nil {
		return err
	}
	var changes []AlarmChange
	var newest Reading
	ruled := rules // the rules whose targets keep their alarms
	err = tx.QueryRow(ctx, `SELECT datetime, input_ids, vals FROM sensor_latest WHERE sensor_id = $1`, sensor.ID).
		Scan(&newest.Time, &newest.InputIDs, &newest.Values)
	switch {
	case err == nil:
		if changes, err = db.alarms.Recheck(ctx, txLinks{tx}, sensor, rules, newest); err != nil {
			return err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	default:
		// No reading left (a delete took them all): no rule holds, and every
		// target's alarm clears as a target without rules does.
		for i := range rules {
			rules[i].Active, rules[i].Streak = false, 0
		}
		ruled = nil
	}
	if err := applyAlarms(ctx, tx, sensor, rules, nil, changes); err != nil {
		return err
	}
	return clearUnruled(ctx, tx, sensor, ruled)
}

func sensorRules(ctx context.Context, tx pgx.Tx, sensorID int64) ([]AlarmRule, error) {
	rows, _ := tx.Query(ctx, sensorRulesSQL, sensorID)
	return pgx.CollectRows(rows, pgx.RowToStructByName[AlarmRule])
}

// ruleState is the state a rule carries from reading to reading.
type ruleState struct {
	active bool
	streak int
}

func ruleStates(rules []AlarmRule) []ruleState {
	states := make([]ruleState, len(rules))
	for i, r := range rules {
		states[i] = ruleState{r.Active, r.Streak}
	}
	return states
}

// applyAlarms writes the rules' states (those that differ from before,
// all of them when before is nil), the current alarms and the events that
// changes make, in one round trip however many changes a batch makes,
// since a noisy target can change level at many of a batch's readings.
func applyAlarms(ctx context.Context, tx pgx.Tx, sensor Sensor, rules []AlarmRule, before []ruleState, changes []AlarmChange) error {
	var (
		ids     []int64
		active  []bool
		streaks []int32
	)
	for i, r := range rules {
		if before == nil || before[i] != (ruleState{r.Active, r.Streak}) {
			ids, active, streaks = append(ids, r.ID), append(active, r.Active), append(streaks, int32(r.Streak))
		}
	}
	write := &pgx.Batch{}
	if len(ids) > 0 {
		write.Queue(`
UPDATE alarm_rules r SET active = u.active, streak = u.streak
FROM unnest($1::bigint[], $2::boolean[], $3::int[]) AS u(id, active, streak)
WHERE r.id = u.id AND (r.active, r.streak) IS DISTINCT FROM (u.active, u.streak)`, ids, active, streaks)
	}
	if len(changes) > 0 {
		queueChanges(write, sensor, rules, changes)
	}
	if write.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, write).Close()
}

// queueChanges queues the statements that write the current alarms and
// events of changes.
func queueChanges(write *pgx.Batch, sensor Sensor, rules []AlarmRule, changes []AlarmChange) {
	var events eventColumns
	targets := map[int64]*targetOutcome{}
	var order []int64 // targets in the order of their first change
	for _, c := range changes {
		rank := c.To
		if rank == 0 { // a clearing names the level it leaves
			rank = c.From
		}
		key, level := targetLevel(rules, c.TargetID, rank)
		events.add(key, c, level)
		if c.Late {
			continue
		}
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
	write.Queue(`
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at)
SELECT $1, $2, target_key, kind, level_id, level_name, value, reading_at
FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::float8[], $8::timestamptz[]) WITH ORDINALITY
    AS u(target_key, kind, level_id, level_name, value, reading_at, n)
ORDER BY n`, sensor.ProjectID, sensor.ID, events.keys, events.kinds, events.levelIDs, events.levelNames, events.values, events.at)
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
}

func (e *eventColumns) add(key string, c AlarmChange, level levelRef) {
	e.keys = append(e.keys, key)
	e.kinds = append(e.kinds, c.Kind)
	e.levelIDs = append(e.levelIDs, level.id)
	e.levelNames = append(e.levelNames, level.name)
	e.values = append(e.values, c.Value)
	e.at = append(e.at, c.At)
}

type levelRef struct {
	id   *int64
	name string
}

// targetLevel is the key of target and the level of its rules at rank.
func targetLevel(rules []AlarmRule, target int64, rank int) (string, levelRef) {
	key := ""
	for _, r := range rules {
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

// clearUnruled clears the alarms of targets left without rules, with an
// event each; the overdue alarm (target 0) is the background check's.
func clearUnruled(ctx context.Context, tx pgx.Tx, sensor Sensor, rules []AlarmRule) error {
	targets := make([]int64, 0, len(rules))
	for _, r := range rules {
		targets = append(targets, r.TargetID)
	}
	_, err := tx.Exec(ctx, `
WITH gone AS (
    DELETE FROM alarms WHERE sensor_id = $1 AND target_id <> 0 AND target_id <> ALL($2) RETURNING project_id, sensor_id, target_key, level_id, value, since
)
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at)
SELECT g.project_id, g.sensor_id, g.target_key, 'cleared', g.level_id, l.name, g.value, g.since
FROM gone g JOIN alarm_levels l ON l.id = g.level_id`, sensor.ID, targets)
	return err
}

const alarmColumns = `a.id, a.project_id, a.sensor_id, a.target_id, a.target_key, a.level_id, l.name AS level_name, l.rank, l.colour,
a.since, a.value, a.acknowledged_at, a.acknowledged_by, a.note`

// ListAlarms returns the project's current alarms, most severe first. It
// returns NotFound for a project not in orgID.
func (db *DB) ListAlarms(ctx context.Context, orgID, projectID int64) ([]Alarm, error) {
	if _, err := db.GetProject(ctx, orgID, projectID); err != nil {
		return nil, err
	}
	rows, _ := db.pool.Query(ctx, `SELECT `+alarmColumns+` FROM alarms a JOIN alarm_levels l ON l.id = a.level_id
WHERE a.project_id = $1 ORDER BY l.rank DESC, a.since, a.id`, projectID)
	alarms, err := pgx.CollectRows(rows, pgx.RowToStructByName[Alarm])
	return alarms, dbError("list alarms", err)
}

// AcknowledgeAlarm records that userID has seen the alarm, with a note,
// and appends the event. It returns NotFound, and Conflict when the
// project is archived.
func (db *DB) AcknowledgeAlarm(ctx context.Context, orgID, projectID, alarmID, userID int64, note string) (Alarm, error) {
	var alarm Alarm
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if err := lockWritableProject(ctx, tx, orgID, projectID); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
WITH a AS (
    UPDATE alarms SET acknowledged_at = now(), acknowledged_by = $3, note = $4
    WHERE id = $1 AND project_id = $2 RETURNING *
)
SELECT `+alarmColumns+` FROM a JOIN alarm_levels l ON l.id = a.level_id`, alarmID, projectID, userID, note)
		var err error
		alarm, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Alarm])
		if err != nil {
			return notFound("acknowledge alarm", err, "alarm")
		}
		_, err = tx.Exec(ctx, `
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at, user_id, note)
VALUES ($1, $2, $3, 'acknowledged', $4, $5, $6, $7, $8, $9)`,
			projectID, alarm.SensorID, alarm.TargetKey, alarm.LevelID, alarm.LevelName, alarm.Value, alarm.Since, userID, note)
		return err
	})
	return alarm, dbError("acknowledge alarm", err)
}

// ListAlarmEvents returns up to q.Limit events of the project that q
// selects, oldest first (newest first with q.Desc), and whether more
// follow. It returns NotFound for a project not in orgID.
func (db *DB) ListAlarmEvents(ctx context.Context, orgID, projectID int64, q AlarmEventQuery) ([]AlarmEvent, bool, error) {
	if _, err := db.GetProject(ctx, orgID, projectID); err != nil {
		return nil, false, err
	}
	sql, after := listAlarmEventsAsc, q.After
	if q.Desc {
		sql = listAlarmEventsDesc
		if after == 0 {
			after = math.MaxInt64
		}
	}
	rows, _ := db.pool.Query(ctx, sql, projectID, after, q.SensorID, q.LevelID, q.From, q.To, q.Limit+1)
	return collectPage[AlarmEvent]("list alarm events", rows, q.Limit)
}

// The two orders are two statements rather than one with a CASE, so that
// each walks the (project_id, id) index in its direction.
const (
	listAlarmEventsSelect = `
SELECT id, project_id, sensor_id, target_key, kind, level_id, level_name, value, reading_at, user_id, note, created_at
FROM alarm_events
WHERE project_id = $1 AND ($3 = 0 OR sensor_id = $3) AND ($4 = 0 OR level_id = $4)
  AND created_at BETWEEN $5 AND $6`
	listAlarmEventsAsc  = listAlarmEventsSelect + ` AND id > $2 ORDER BY id LIMIT $7`
	listAlarmEventsDesc = listAlarmEventsSelect + ` AND id < $2 ORDER BY id DESC LIMIT $7`
)

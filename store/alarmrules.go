package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/alarms"
	"github.com/sensorreadings/readings/apperr"
)

// AlarmRule raises its level when its target, an input or output of its
// sensor, goes above or below the threshold: the alarms.Rule, whose Rank
// is its level's, stored with the alarms.State it carries from reading to
// reading.
type AlarmRule struct {
	ID        int64  `db:"id"`
	SensorID  int64  `db:"sensor_id"`
	TargetID  int64  `db:"target_id"`
	TargetKey string `db:"target_key"`
	LevelID   int64  `db:"level_id"`
	LevelName string `db:"level_name"`
	alarms.Rule
	alarms.State
	// A rate rule watches its target's change over its last Window
	// seconds, per Per seconds; 0 for a rule on the value.
	Window    int64     `db:"rate_window_s"`
	Per       int64     `db:"rate_per_s"`
	CreatedAt time.Time `db:"created_at"`
	// TargetRank is the rank of the target's current alarm, 0 at rest: the
	// level an evaluation starts from.
	TargetRank int `db:"target_rank"`
	// RateStamp names what a rate rule keeps of its window (0: nothing):
	// the service whose write drew it holds the window in memory
	// (RateWindow), which no other service has; the store keeps only the
	// stamp. KeptWindow is that window, nil when its caller does not hold
	// it (and in lists); a write that changes the stamp sets KeptChanged.
	RateStamp   int64       `db:"rate_kept_stamp"`
	KeptWindow  *RateWindow `db:"-"`
	KeptChanged bool        `db:"-"`
}

// AlarmRuleSpec is a rule as a client writes it.
type AlarmRuleSpec struct {
	TargetKey   string  `json:"target"`
	Level       string  `json:"level"` // the level's name
	Direction   string  `json:"direction"`
	Threshold   float64 `json:"threshold"`
	Deadband    float64 `json:"deadband"`
	Persistence int     `json:"persistence"`
	Window      int64   `json:"window,omitempty"` // seconds; 0: not a rate rule
	Per         int64   `json:"per,omitempty"`    // seconds
}

const alarmRuleColumns = alarmRuleFields + `, 0::bigint AS rate_kept_stamp`

const alarmRuleFields = `r.id, r.sensor_id, r.target_id, r.target_key, r.level_id, l.rank, l.name AS level_name,
r.direction = 'below' AS below, r.threshold, r.deadband, r.persistence, r.active, r.streak, r.created_at,
coalesce(r.rate_window_s, 0)::bigint AS rate_window_s, coalesce(r.rate_per_s, 0)::bigint AS rate_per_s,
coalesce((SELECT al.rank FROM alarms a JOIN alarm_levels al ON al.id = a.level_id WHERE a.sensor_id = r.sensor_id AND a.target_id = r.target_id), 0) AS target_rank`

// sensorRulesSQL is a sensor's rules, ordered by target as evaluators
// take them, with the stamps of what the rate rules keep.
const sensorRulesSQL = `SELECT ` + alarmRuleFields + `, coalesce(r.rate_kept_stamp, 0) AS rate_kept_stamp
FROM alarm_rules r JOIN alarm_levels l ON l.id = r.level_id
WHERE r.sensor_id = $1
ORDER BY r.target_id, r.id`

// RuleKey is where a rule stands in a sensor's list: by target, then id.
type RuleKey struct{ TargetID, ID int64 }

// Key is the rule's place in its sensor's list.
func (r AlarmRule) Key() RuleKey { return RuleKey{TargetID: r.TargetID, ID: r.ID} }

// ListAlarmRules returns up to limit trigger rules of the sensor after
// after (the zero key: from the first), by target, whether more follow, and
// its overdue rule, nil when it has none. It returns NotFound.
func (db *DB) ListAlarmRules(ctx context.Context, key SensorKey, after RuleKey, limit int) ([]AlarmRule, bool, *OverdueRule, error) {
	if _, err := db.GetSensor(ctx, key); err != nil {
		return nil, false, nil, err
	}
	rows, _ := db.pool.Query(ctx, `SELECT `+alarmRuleColumns+` FROM alarm_rules r JOIN alarm_levels l ON l.id = r.level_id
WHERE r.sensor_id = $1 AND (r.target_id, r.id) > ($2, $3) ORDER BY r.target_id, r.id LIMIT $4`,
		key.SensorID, after.TargetID, after.ID, limit+1)
	rules, more, err := collectPage[AlarmRule]("list alarm rules", rows, limit)
	if err != nil {
		return nil, false, nil, err
	}
	overdue, err := overdueRule(ctx, db.pool, key.SensorID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return rules, more, nil, nil
	case err != nil:
		return nil, false, nil, dbError("list alarm rules", err)
	}
	return rules, more, &overdue, nil
}

// CreateAlarmRule adds a rule to the sensor, which it locks as its writers
// do (LockSensor), and returns the rule's id and the sensor, for the
// domain to recheck its alarms in the same transaction. It returns
// NotFound; Invalid for a target that is not one of the sensor's inputs or
// outputs, a level that is not the project's, or values the table refuses;
// and Conflict when the project is archived or the sensor has its
// Limits.AlarmRules.
func (tx *Tx) CreateAlarmRule(ctx context.Context, key SensorKey, spec AlarmRuleSpec) (int64, Sensor, error) {
	var id int64
	sensor, err := tx.LockSensor(ctx, key)
	if err != nil {
		return 0, sensor, err
	}
	err = func() error {
		if err := makeRoom(ctx, tx.tx, tx.limits, alarmRulesCap, sensor.ID); err != nil {
			return err
		}
		targetID, levelID, err := ruleTarget(ctx, tx.tx, sensor, spec)
		if err != nil {
			return err
		}
		return tx.tx.QueryRow(ctx, `
INSERT INTO alarm_rules (sensor_id, target_id, target_key, level_id, direction, threshold, deadband, persistence, rate_window_s, rate_per_s)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, nullif($9, 0), nullif($10, 0)) RETURNING id`,
			sensor.ID, targetID, spec.TargetKey, levelID, spec.Direction, spec.Threshold, spec.Deadband, spec.Persistence, spec.Window, spec.Per).Scan(&id)
	}()
	return id, sensor, dbError("create alarm rule", err)
}

// UpdateAlarmRule replaces the rule, whose state starts over, and returns
// its sensor, locked as CreateAlarmRule locks it. It returns NotFound, and
// Invalid and Conflict as CreateAlarmRule.
func (tx *Tx) UpdateAlarmRule(ctx context.Context, key SensorKey, ruleID int64, spec AlarmRuleSpec) (Sensor, error) {
	sensor, err := tx.LockSensor(ctx, key)
	if err != nil {
		return sensor, err
	}
	err = func() error {
		targetID, levelID, err := ruleTarget(ctx, tx.tx, sensor, spec)
		if err != nil {
			return err
		}
		tag, err := tx.tx.Exec(ctx, `
WITH parts AS (
    DELETE FROM rate_kept_parts WHERE rule_id = $1 AND sensor_id = $2
)
UPDATE alarm_rules SET target_id = $3, target_key = $4, level_id = $5, direction = $6, threshold = $7, deadband = $8, persistence = $9,
    rate_window_s = nullif($10, 0), rate_per_s = nullif($11, 0), active = false, streak = 0, rate_kept = NULL, rate_kept_stamp = NULL
WHERE id = $1 AND sensor_id = $2`,

			ruleID, sensor.ID, targetID, spec.TargetKey, levelID, spec.Direction, spec.Threshold, spec.Deadband, spec.Persistence, spec.Window, spec.Per)
		if err == nil && tag.RowsAffected() == 0 {
			return notFound("update alarm rule", pgx.ErrNoRows, "alarm rule")
		}
		return err
	}()
	return sensor, dbError("update alarm rule", err)
}

// DeleteAlarmRule deletes the rule and returns its sensor, locked as
// CreateAlarmRule locks it. It returns NotFound, and Conflict when the
// project is archived.
func (tx *Tx) DeleteAlarmRule(ctx context.Context, key SensorKey, ruleID int64) (Sensor, error) {
	sensor, err := tx.LockSensor(ctx, key)
	if err != nil {
		return sensor, err
	}
	tag, err := tx.tx.Exec(ctx, `
WITH parts AS (
    DELETE FROM rate_kept_parts WHERE rule_id = $1 AND sensor_id = $2
)
DELETE FROM alarm_rules WHERE id = $1 AND sensor_id = $2`, ruleID, sensor.ID)
	if err == nil && tag.RowsAffected() == 0 {
		err = notFound("delete alarm rule", pgx.ErrNoRows, "alarm rule")
	}
	return sensor, dbError("delete alarm rule", err)
}

// AlarmRule returns the rule. It returns NotFound.
func (tx *Tx) AlarmRule(ctx context.Context, ruleID int64) (AlarmRule, error) {
	rows, _ := tx.tx.Query(ctx, `SELECT `+alarmRuleColumns+` FROM alarm_rules r JOIN alarm_levels l ON l.id = r.level_id WHERE r.id = $1`, ruleID)
	rule, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AlarmRule])
	return rule, notFound("get alarm rule", err, "alarm rule")
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

package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Check is a validity check of a sensor: it flags the value of its target,
// an input or output, that fails it, and never refuses a reading.
type Check struct {
	TargetID int64    `json:"target_id"`
	Target   string   `json:"target"` // its key, as a client names it
	Output   bool     `json:"output,omitempty"`
	Kind     string   `json:"kind"` // range, spike, rate, stuck
	Min      *float64 `json:"min,omitempty"`
	Max      *float64 `json:"max,omitempty"`
	Bound    float64  `json:"bound,omitempty"`
	Per      int64    `json:"per,omitempty"` // seconds
	Count    int      `json:"count,omitempty"`
	Flag     string   `json:"flag"`
}

// ParseChecks reads checks as SensorWrite.Checks holds them.
func ParseChecks(raw []byte) ([]Check, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var checks []Check
	if err := json.Unmarshal(raw, &checks); err != nil {
		return nil, err
	}
	return checks, nil
}

// Checks returns the sensor's checks. It returns NotFound.
func (db *DB) Checks(ctx context.Context, key SensorKey) ([]Check, error) {
	if _, err := db.GetSensor(ctx, key); err != nil {
		return nil, err
	}
	var raw []byte
	err := db.pool.QueryRow(ctx, `SELECT checks FROM sensor_checks WHERE sensor_id = $1`, key.SensorID).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dbError("checks", err)
	}
	return ParseChecks(raw)
}

// SetChecks replaces the sensor's checks and returns those it replaced.
func (tx *Tx) SetChecks(ctx context.Context, sensorID int64, checks []Check) ([]Check, error) {
	var before []byte
	err := tx.tx.QueryRow(ctx, `SELECT checks FROM sensor_checks WHERE sensor_id = $1`, sensorID).Scan(&before)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, dbError("set checks", err)
	}
	if len(checks) == 0 {
		_, err = tx.tx.Exec(ctx, `DELETE FROM sensor_checks WHERE sensor_id = $1`, sensorID)
	} else {
		_, err = tx.tx.Exec(ctx, `
INSERT INTO sensor_checks (sensor_id, checks) VALUES ($1, $2)
ON CONFLICT (sensor_id) DO UPDATE SET checks = EXCLUDED.checks, updated_at = now()`, sensorID, checks)
	}
	if err != nil {
		return nil, dbError("set checks", err)
	}
	return ParseChecks(before)
}

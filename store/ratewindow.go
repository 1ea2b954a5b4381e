package store

import (
	"context"
	"time"
)

// RateWindow is what a rate rule keeps of its target's values between
// writes: those of the readings from Through less the rule's window to
// Through, the sensor's newest reading when it was kept, as the rule sees
// them (flags applied), computed with the sensor's instance at Version (0
// without one). The domain holds it in memory; the store keeps only its
// stamp (AlarmRule.RateStamp).
type RateWindow struct {
	Through time.Time
	Version int64
	Micros  []int64 // the values' instants, in Unix microseconds, ascending
	Values  []float64
}

// ForgetRateWindows clears the stamps of what the sensor's rate rules
// keep, in an edit that changes what their windows would hold (a flag, a
// delete, the sensor's formulas or rules), so that no service uses the
// window it holds and its next write reads them again. What earlier
// releases stored of the windows (their heads and parts) goes too.
func (tx *Tx) ForgetRateWindows(ctx context.Context, sensorID int64) error {
	_, err := tx.tx.Exec(ctx, `
WITH parts AS (
    DELETE FROM rate_kept_parts WHERE sensor_id = $1
)
UPDATE alarm_rules SET rate_kept = NULL, rate_kept_stamp = NULL
WHERE sensor_id = $1 AND (rate_kept IS NOT NULL OR rate_kept_stamp IS NOT NULL)`, sensorID)
	return dbError("forget rate windows", err)
}

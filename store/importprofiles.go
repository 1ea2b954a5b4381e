package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// ImportProfile says how a sensor's datalogger files are read: which file
// column feeds which input, and how the logger's local datetimes become
// instants.
type ImportProfile struct {
	SensorID  int64
	Columns   []ProfileColumn // by name
	TZ        string          // an IANA zone
	DST       string          // "earlier", "later", or "" to refuse a time in the autumn fold
	UpdatedAt *time.Time      // nil for the defaults of a sensor whose profile was never set
}

// ProfileColumn is a file column that feeds an input.
type ProfileColumn struct {
	Name    string
	InputID int64
	// InputKey is the input's key in the sensor's instance, or "" for a
	// sensor without one.
	InputKey string
}

// ImportProfileSpec is a profile as a client sets it: each column names
// the input it feeds by key or decimal id.
type ImportProfileSpec struct {
	Columns map[string]string
	TZ      string
	DST     string
}

// GetImportProfile returns the sensor's import profile, or the defaults
// (UTC, no DST choice, no columns) when it has none. It returns NotFound
// when the sensor does not exist.
func (db *DB) GetImportProfile(ctx context.Context, key SensorKey) (ImportProfile, error) {
	sensor, err := db.GetSensor(ctx, key)
	if err != nil {
		return ImportProfile{}, err
	}
	p, err := db.ImportProfileOf(ctx, sensor)
	if err != nil {
		return ImportProfile{}, err
	}
	if p == nil {
		return ImportProfile{SensorID: sensor.ID, TZ: "UTC"}, nil
	}
	return *p, nil
}

// ImportProfileOf returns sensor's import profile, or nil when it has none.
func (db *DB) ImportProfileOf(ctx context.Context, sensor Sensor) (*ImportProfile, error) {
	p := ImportProfile{SensorID: sensor.ID}
	var (
		columns map[string]int64
		dst     *string
	)
	err := db.pool.QueryRow(ctx, `SELECT columns, tz, dst, updated_at FROM import_profiles WHERE sensor_id = $1`, sensor.ID).
		Scan(&columns, &p.TZ, &dst, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dbError("get import profile", err)
	}
	if dst != nil {
		p.DST = *dst
	}
	for name, id := range columns {
		c := ProfileColumn{Name: name, InputID: id}
		if sensor.Instance != nil {
			if i := slices.IndexFunc(sensor.Instance.Inputs, func(in InstanceInput) bool { return in.ID == id }); i >= 0 {
				c.InputKey = sensor.Instance.Inputs[i].Key
			}
		}
		p.Columns = append(p.Columns, c)
	}
	slices.SortFunc(p.Columns, func(a, b ProfileColumn) int { return strings.Compare(a.Name, b.Name) })
	return &p, nil
}

// SetImportProfile gives the sensor an import profile, or replaces its
// profile. The zone is the caller's to check. It returns NotFound; Invalid,
// naming the column, for an input that is not the sensor's (a key or id of
// its instance, or a decimal id for a sensor without one) or two columns
// that feed one input; Conflict when the project is archived.
func (db *DB) SetImportProfile(ctx context.Context, key SensorKey, spec ImportProfileSpec) (ImportProfile, error) {
	err := db.editSensor(ctx, key, func(tx pgx.Tx, sensor Sensor) error {
		columns, err := ResolveColumns(sensor.Instance, spec.Columns)
		if err != nil {
			return err
		}
		var dst *string
		if spec.DST != "" {
			dst = &spec.DST
		}
		_, err = tx.Exec(ctx, `
INSERT INTO import_profiles (sensor_id, columns, tz, dst) VALUES ($1, $2, $3, $4)
ON CONFLICT (sensor_id) DO UPDATE SET columns = EXCLUDED.columns, tz = EXCLUDED.tz, dst = EXCLUDED.dst, updated_at = now()`,
			sensor.ID, columns, spec.TZ, dst)
		return err
	})
	if err != nil {
		return ImportProfile{}, dbError("set import profile", err)
	}
	return db.GetImportProfile(ctx, key)
}

// ResolveColumns resolves the input each file column feeds, named by key
// or id (see Instance.InputID), to its id. It returns Invalid, naming the
// column, for an input that is not the sensor's or two columns that feed
// one input.
func ResolveColumns(inst *Instance, spec map[string]string) (map[string]int64, error) {
	columns := make(map[string]int64, len(spec))
	fed := make(map[int64]string, len(spec))
	names := make([]string, 0, len(spec))
	for name := range spec {
		names = append(names, name)
	}
	slices.Sort(names) // errors name the same column whatever the map's order
	for _, name := range names {
		input := spec[name]
		id, ok := inst.InputID(input)
		if !ok {
			return nil, &apperr.Error{Code: apperr.Invalid, Details: map[string]any{"column": name},
				Message: fmt.Sprintf("columns: column %q: %q is not an input of the sensor (%s)", name, input, inst.InputList())}
		}
		if other, twice := fed[id]; twice {
			return nil, &apperr.Error{Code: apperr.Invalid, Details: map[string]any{"column": name},
				Message: fmt.Sprintf("columns: columns %q and %q both feed input %s", other, name, input)}
		}
		fed[id], columns[name] = name, id
	}
	return columns, nil
}

// InputID finds the input a client names by its key or its id in
// canonical decimal; a sensor without an instance (inst nil) takes any id.
func (inst *Instance) InputID(name string) (int64, bool) {
	id, err := strconv.ParseInt(name, 10, 64)
	isID := err == nil && id > 0 && strconv.FormatInt(id, 10) == name
	if inst == nil {
		return id, isID
	}
	for _, in := range inst.Inputs {
		if in.Key == name || (isID && in.ID == id) {
			return in.ID, true
		}
	}
	return 0, false
}

// InputList names the inputs a client may name, for errors.
func (inst *Instance) InputList() string {
	if inst == nil {
		return "the sensor has no blueprint, so inputs are decimal ids"
	}
	parts := make([]string, len(inst.Inputs))
	for i, in := range inst.Inputs {
		parts[i] = fmt.Sprintf("%s or %d", in.Key, in.ID)
	}
	return "its inputs are " + strings.Join(parts, ", ")
}

// DeleteImportProfile deletes the sensor's import profile, if it has one,
// so that it has the defaults again. It returns NotFound for a sensor that
// does not exist, and Conflict when the project is archived.
func (db *DB) DeleteImportProfile(ctx context.Context, key SensorKey) error {
	return dbError("delete import profile", db.editSensor(ctx, key, func(tx pgx.Tx, sensor Sensor) error {
		_, err := tx.Exec(ctx, `DELETE FROM import_profiles WHERE sensor_id = $1`, sensor.ID)
		return err
	}))
}

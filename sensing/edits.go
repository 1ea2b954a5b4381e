package sensing

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/sensorreadings/readings/alarms"
	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/formulas"
	"github.com/sensorreadings/readings/store"
)

// The edits here change what a sensor's readings mean (its formulas,
// constants, baselines, links) or what watches them (its alarm rules), or
// delete readings: each rechecks the sensor's alarms against its newest
// reading in its own transaction, so that it takes effect at once, not at
// the next reading.

// SensorEdit is a change of a sensor; nil fields change nothing.
type SensorEdit struct {
	Name, Description *string
	// BlueprintID, when it is not the sensor's blueprint, gives the sensor
	// a new instance of it; with the sensor's own, Constants apply to its
	// instance.
	BlueprintID *int64
	Constants   map[string]float64 // nil: none
}

// CreateSensor creates a sensor in the project, with an instance of the
// organization's blueprint blueprintID when it is not nil, whose constants
// take constants' values. It returns NotFound for a blueprint that is not
// the organization's, Invalid for constants without a blueprint or
// unknown to it, and the store's errors.
func (s *Service) CreateSensor(ctx context.Context, orgID, projectID int64, name, description string, blueprintID *int64, constants map[string]float64) (store.Sensor, error) {
	var attach *store.Attachment
	switch {
	case blueprintID != nil:
		a, err := s.attachment(ctx, orgID, *blueprintID, constants)
		if err != nil {
			return store.Sensor{}, err
		}
		attach = &a
	case constants != nil:
		return store.Sensor{}, apperr.Errorf(apperr.Invalid, "constants need a blueprint_id: a sensor without a blueprint has none")
	}
	return s.db.CreateSensor(ctx, orgID, projectID, name, description, attach)
}

// attachment makes a new instance of blueprint id of the organization.
func (s *Service) attachment(ctx context.Context, orgID, blueprintID int64, constants map[string]float64) (store.Attachment, error) {
	b, err := s.db.GetBlueprint(ctx, orgID, blueprintID)
	if apperr.CodeOf(err) == apperr.NotFound {
		// As another organization's id in the path would be: not found.
		return store.Attachment{}, &apperr.Error{Code: apperr.NotFound, Message: fmt.Sprintf("blueprint_id %d is not a blueprint of this organization", blueprintID),
			Details: map[string]any{"field": "/blueprint_id"}}
	}
	if err != nil {
		return store.Attachment{}, err
	}
	inst, err := b.Instantiate(constants)
	if err != nil {
		return store.Attachment{}, err
	}
	return store.Attachment{BlueprintID: b.ID, Instance: inst}, nil
}

// UpdateSensor applies edit to the sensor, and rechecks its alarms. A
// blueprint other than the sensor's makes a new instance; the sensor's own
// keeps its instance and applies the constants. It returns the store's
// errors (store.Tx.UpdateSensor), and Invalid for constants without a
// blueprint.
func (s *Service) UpdateSensor(ctx context.Context, key store.SensorKey, edit SensorEdit) (store.Sensor, error) {
	patch := store.SensorPatch{Name: edit.Name, Description: edit.Description}
	if edit.BlueprintID != nil || edit.Constants != nil {
		current, err := s.db.GetSensor(ctx, key)
		if err != nil {
			return store.Sensor{}, err
		}
		newBlueprint := edit.BlueprintID != nil && (current.BlueprintID == nil || *current.BlueprintID != *edit.BlueprintID)
		switch {
		case newBlueprint:
			a, err := s.attachment(ctx, key.OrgID, *edit.BlueprintID, edit.Constants)
			if err != nil {
				return store.Sensor{}, err
			}
			patch.Attach = &a
		case current.Instance == nil:
			return store.Sensor{}, apperr.Errorf(apperr.Invalid, "constants need a blueprint_id: the sensor has no blueprint")
		default:
			inst := current.Instance.Clone()
			if err := inst.SetConstants(store.Values(edit.Constants)); err != nil {
				return store.Sensor{}, err
			}
			patch.Instance = &inst
		}
	}
	return s.updateSensor(ctx, key, patch)
}

// updateSensor saves patch and rechecks the sensor's alarms, in one
// transaction.
func (s *Service) updateSensor(ctx context.Context, key store.SensorKey, patch store.SensorPatch) (store.Sensor, error) {
	var sensor store.Sensor
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		before, after, err := tx.UpdateSensor(ctx, key, patch)
		if err != nil {
			return err
		}
		sensor = after
		if err := auditInstance(ctx, tx, key, before, after); err != nil {
			return err
		}
		return s.recheck(ctx, tx, sensor)
	})
	if err == nil && patch.Instance != nil {
		s.wakeRollups() // every hour's outputs are queued
	}
	return sensor, err
}

// EditInstance applies edit to a copy of the sensor's instance, checks the
// formulas of the result, saves it unless it changed meanwhile (Conflict),
// and rechecks the sensor's alarms. It returns Conflict for a sensor
// without a blueprint, edit's errors, and formulas.Compile's.
func (s *Service) EditInstance(ctx context.Context, key store.SensorKey, edit func(*store.Instance) error) (store.Sensor, error) {
	current, err := s.db.GetSensor(ctx, key)
	if err != nil {
		return store.Sensor{}, err
	}
	if current.Instance == nil {
		return store.Sensor{}, apperr.Errorf(apperr.Conflict, "sensor %d has no blueprint, so no formulas; give it a blueprint_id first", key.SensorID)
	}
	inst := current.Instance.Clone()
	if err := edit(&inst); err != nil {
		return store.Sensor{}, err
	}
	if _, err := formulas.Compile(Spec(&inst)); err != nil {
		return store.Sensor{}, err
	}
	return s.updateSensor(ctx, key, store.SensorPatch{Instance: &inst})
}

// BaselineEdit is a baseline as a request gives it: values from an
// instant, or the inputs of the stored reading at Reading, from From or
// from that reading's instant. Index names it in errors.
type BaselineEdit struct {
	Index   int
	From    *time.Time
	Values  map[string]float64
	Reading *time.Time
}

// SetBaselines replaces the sensor's baselines, taking those chosen by
// reading from the sensor's stored readings, and rechecks its alarms. It
// returns Invalid, naming the baseline, for one that gives both values
// and a reading or neither, values without an instant, or a reading the
// sensor does not have; and EditInstance's errors.
func (s *Service) SetBaselines(ctx context.Context, key store.SensorKey, edits []BaselineEdit) (store.Sensor, error) {
	baselines := make([]store.Baseline, len(edits))
	var sensor *store.Sensor // read once, for the first baseline chosen by reading
	for i, b := range edits {
		if b.Reading != nil && sensor == nil {
			got, err := s.db.GetSensor(ctx, key)
			if err != nil {
				return store.Sensor{}, err
			}
			sensor = &got
		}
		var err error
		if baselines[i], err = s.baseline(ctx, sensor, b); err != nil {
			return store.Sensor{}, err
		}
	}
	return s.EditInstance(ctx, key, func(inst *store.Instance) error {
		return inst.SetBaselines(baselines)
	})
}

// baseline is b's values and instant; a baseline chosen by reading takes
// that reading's inputs, by key, from sensor.
func (s *Service) baseline(ctx context.Context, sensor *store.Sensor, b BaselineEdit) (store.Baseline, error) {
	var out store.Baseline
	invalid := func(format string, args ...any) error {
		return &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("baseline %d: ", b.Index) + fmt.Sprintf(format, args...), Details: map[string]any{"index": b.Index}}
	}
	if (b.Values == nil) == (b.Reading == nil) {
		return out, invalid("give either values or reading, the datetime of a stored reading")
	}
	if b.From != nil {
		out.From = *b.From
	}
	if b.Values != nil {
		if b.From == nil {
			return out, invalid("values need from, the instant they apply from")
		}
		out.Values = b.Values
		return out, nil
	}
	at := *b.Reading
	if b.From == nil {
		out.From = at
	}
	var found *store.Reading
	err := s.db.ListReadings(ctx, *sensor, store.ReadingQuery{From: at, To: at, Limit: 1}, func(r *store.Reading) error {
		found = r
		return nil
	})
	switch {
	case err != nil:
		return out, err
	case found == nil:
		return out, invalid("the sensor has no reading at %s", at.UTC().Format(time.RFC3339Nano))
	case sensor.Instance == nil:
		return out, nil // EditInstance answers the missing blueprint
	}
	out.Values = map[string]float64{}
	for i, id := range found.InputIDs {
		for _, in := range sensor.Instance.Inputs {
			if in.ID == id {
				out.Values[in.Key] = found.Values[i]
			}
		}
	}
	return out, nil
}

// SetLinks replaces the links of the sensor's inputs, by input key, and
// rechecks its alarms. It returns store.Tx.SetSensorLinks' errors.
func (s *Service) SetLinks(ctx context.Context, key store.SensorKey, links map[string]store.InputLink) (store.Sensor, error) {
	var sensor store.Sensor
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		before, err := tx.LockSensor(ctx, key)
		if err != nil {
			return err
		}
		if sensor, err = tx.SetSensorLinks(ctx, key, links); err != nil {
			return err
		}
		if err := auditInstance(ctx, tx, key, before, sensor); err != nil {
			return err
		}
		return s.recheck(ctx, tx, sensor)
	})
	if err == nil {
		s.wakeRollups()
	}
	return sensor, err
}

// CreateAlarmRule adds a rule to the sensor and rechecks its alarms
// against its newest reading, in one transaction. It returns Invalid for
// numbers a rule cannot be evaluated with (alarms.Rule.Check), and
// store.Tx.CreateAlarmRule's errors.
func (s *Service) CreateAlarmRule(ctx context.Context, key store.SensorKey, spec store.AlarmRuleSpec) (store.AlarmRule, error) {
	if err := checkRule(spec); err != nil {
		return store.AlarmRule{}, err
	}
	var rule store.AlarmRule
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		id, sensor, err := tx.CreateAlarmRule(ctx, key, spec)
		if err != nil {
			return err
		}
		if err := s.recheck(ctx, tx, sensor); err != nil {
			return err
		}
		if rule, err = tx.AlarmRule(ctx, id); err != nil {
			return err
		}
		return tx.Audit(ctx, store.Change{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: key.SensorID, Kind: store.AuditRule, Action: "create", After: spec})
	})
	return rule, err
}

// UpdateAlarmRule replaces the rule, whose state starts over, and
// rechecks the sensor's alarms at once. It returns CreateAlarmRule's
// errors.
func (s *Service) UpdateAlarmRule(ctx context.Context, key store.SensorKey, ruleID int64, spec store.AlarmRuleSpec) (store.AlarmRule, error) {
	if err := checkRule(spec); err != nil {
		return store.AlarmRule{}, err
	}
	var rule store.AlarmRule
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		before, err := tx.AlarmRule(ctx, ruleID)
		if err != nil && apperr.CodeOf(err) != apperr.NotFound {
			return err
		}
		sensor, err := tx.UpdateAlarmRule(ctx, key, ruleID, spec)
		if err != nil {
			return err
		}
		if err := s.recheck(ctx, tx, sensor); err != nil {
			return err
		}
		if rule, err = tx.AlarmRule(ctx, ruleID); err != nil {
			return err
		}
		return tx.Audit(ctx, store.Change{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: key.SensorID, Kind: store.AuditRule, Action: "update",
			Before: ruleSpec(before), After: spec})
	})
	return rule, err
}

// DeleteAlarmRule deletes the rule and rechecks the sensor's alarms: a
// target left without rules is at rest. It returns
// store.Tx.DeleteAlarmRule's errors.
func (s *Service) DeleteAlarmRule(ctx context.Context, key store.SensorKey, ruleID int64) error {
	return s.db.InTx(ctx, func(tx *store.Tx) error {
		before, err := tx.AlarmRule(ctx, ruleID)
		if err != nil && apperr.CodeOf(err) != apperr.NotFound {
			return err
		}
		sensor, err := tx.DeleteAlarmRule(ctx, key, ruleID)
		if err != nil {
			return err
		}
		if err := tx.Audit(ctx, store.Change{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: key.SensorID, Kind: store.AuditRule, Action: "delete",
			Before: ruleSpec(before)}); err != nil {
			return err
		}
		return s.recheck(ctx, tx, sensor)
	})
}

// checkRule checks a rule's numbers the way the evaluation needs them;
// the level's rank is the store's to find, and any rank passes here.
func checkRule(spec store.AlarmRuleSpec) error {
	if spec.Window == 0 && spec.Per != 0 {
		return &apperr.Error{Code: apperr.Invalid, Message: "per is a rate rule's unit of time: give window too", Details: map[string]any{"field": "per"}}
	}
	rule := alarms.Rule{Rank: 1, Threshold: spec.Threshold, Deadband: spec.Deadband, Persistence: spec.Persistence}
	return rule.Check()
}

// DeleteReadings deletes the sensor's readings from from (inclusive) to to
// (exclusive) and returns how many there were. When the newest reading is
// among them, the current alarms follow the newest reading back to the
// one the delete left (or rest, when none is); the events stay. It
// returns store.Tx.DeleteReadings' errors.
func (s *Service) DeleteReadings(ctx context.Context, key store.SensorKey, from, to time.Time) (int64, error) {
	var deleted int64
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		d, err := tx.DeleteReadings(ctx, key, from, to)
		deleted = d.Count
		if err != nil || d.Count == 0 {
			return err
		}
		if err := tx.Audit(ctx, store.Change{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: key.SensorID, Kind: store.AuditDelete, Action: "delete",
			Before: map[string]any{"deleted": d.Count, "from": datetime.FormatExact(from), "to": datetime.FormatExact(to.Add(-time.Microsecond))}}); err != nil {
			return err
		}
		if !d.TookNewest {
			return tx.ForgetRateWindows(ctx, d.Sensor.ID)
		}
		return s.recheck(ctx, tx, d.Sensor)
	})
	return deleted, err
}

// CreateBlueprint checks a blueprint's formulas and saves it. It returns
// formulas.Compile's errors and the store's.
func (s *Service) CreateBlueprint(ctx context.Context, orgID int64, b store.Blueprint) (store.Blueprint, error) {
	if err := compileBlueprint(b); err != nil {
		return store.Blueprint{}, err
	}
	return s.db.CreateBlueprint(ctx, orgID, b)
}

// UpdateBlueprint checks a blueprint's formulas and replaces it; its
// instances keep theirs. It returns CreateBlueprint's errors.
func (s *Service) UpdateBlueprint(ctx context.Context, orgID, id int64, b store.Blueprint) (store.Blueprint, error) {
	if err := compileBlueprint(b); err != nil {
		return store.Blueprint{}, err
	}
	return s.db.UpdateBlueprint(ctx, orgID, id, b)
}

// compileBlueprint compiles b's formulas, so that nothing invalid is
// saved.
func compileBlueprint(b store.Blueprint) error {
	spec := formulas.Spec{}
	for _, in := range b.Inputs {
		spec.Inputs = append(spec.Inputs, in.Key)
	}
	for _, c := range b.Constants {
		spec.Constants = append(spec.Constants, c.Key)
	}
	for _, o := range b.Outputs {
		spec.Outputs = append(spec.Outputs, formulas.Output{Key: o.Key, Formula: o.Formula})
	}
	_, err := formulas.Compile(spec)
	return err
}

// auditInstance records in the audit trail each kind of change from
// before's instance to after's, with both whole: the trail is where reads
// as of a past instant find the instance in force then.
func auditInstance(ctx context.Context, tx *store.Tx, key store.SensorKey, before, after store.Sensor) error {
	for _, kind := range instanceChanges(before, after) {
		err := tx.Audit(ctx, store.Change{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: key.SensorID,
			Kind: kind, Action: "update", Before: before.Instance, After: after.Instance})
		if err != nil {
			return err
		}
	}
	return nil
}

// instanceChanges names what changed of a sensor's instance.
func instanceChanges(before, after store.Sensor) []string {
	b, a := before.Instance, after.Instance
	if b == nil && a == nil {
		return nil
	}
	if b == nil || a == nil || !slices.Equal(portIDs(b), portIDs(a)) {
		return []string{store.AuditBlueprint} // a new instance: ids of its own
	}
	aspects := []struct {
		kind string
		of   func(*store.Instance) []any
	}{
		{store.AuditFormulas, func(i *store.Instance) []any {
			return each(i.Outputs, func(o store.InstanceOutput) any { return o.Formula })
		}},
		{store.AuditConstants, func(i *store.Instance) []any {
			return each(i.Constants, func(c store.InstanceConstant) any { return c.Value })
		}},
		{store.AuditCalibrations, func(i *store.Instance) []any {
			return each(i.Constants, func(c store.InstanceConstant) any { return c.Calibrations })
		}},
		{store.AuditBaselines, func(i *store.Instance) []any {
			return each(i.Inputs, func(in store.InstanceInput) any { return in.Baselines })
		}},
		{store.AuditLinks, func(i *store.Instance) []any {
			return each(i.Inputs, func(in store.InstanceInput) any { return in.Link })
		}},
	}
	var kinds []string
	for _, aspect := range aspects {
		if !reflect.DeepEqual(aspect.of(b), aspect.of(a)) {
			kinds = append(kinds, aspect.kind)
		}
	}
	return kinds
}

// each is f of every x.
func each[T any](xs []T, f func(T) any) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func portIDs(i *store.Instance) []int64 {
	var ids []int64
	for _, in := range i.Inputs {
		ids = append(ids, in.ID)
	}
	for _, out := range i.Outputs {
		ids = append(ids, out.ID)
	}
	return ids
}

// ruleSpec is a rule as the audit trail records it.
func ruleSpec(r store.AlarmRule) store.AlarmRuleSpec {
	direction := "above"
	if r.Below {
		direction = "below"
	}
	return store.AlarmRuleSpec{TargetKey: r.TargetKey, Level: r.LevelName, Direction: direction, Threshold: r.Threshold, Deadband: r.Deadband, Persistence: r.Persistence}
}

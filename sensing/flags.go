package sensing

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// Flags mark readings, or one input of them, as suspect or rejected,
// without touching the stored values. A rejected value is left out of
// every read (pages, exports, aggregates, latest values) and of the alarm
// rules, as if it were not there, and so of the inputs linked to it; a
// suspect one stays, marked. Neither steps a threshold or rate rule.
// Setting or clearing a flag rechecks at once the alarms of the sensor
// and of the sensors whose links follow it, as every edit does; history
// is never rewritten.

// FlagEdit is a flag as an editor sets or clears it: on the readings from
// From to To, inclusive, of the input Input names (its key, or its id for
// a sensor without a blueprint), or of whole readings when Input is empty.
type FlagEdit struct {
	Flag     string // store.Suspect or store.Rejected; empty to clear
	From, To time.Time
	Input    string
	Reason   string
	By       int64 // the user
}

// FlagResult is what setting or clearing flags did.
type FlagResult struct {
	Flags    []store.Flag // those set, or cleared
	Readings int64        // the stored readings of the range
}

// SetFlag flags the sensor's readings in the edit's range and rechecks its
// alarms, in one transaction. It returns NotFound, Invalid for an input
// that is not the sensor's, and Conflict for an archived project or a
// sensor with the most flags it may have (store.Limits.Flags).
func (s *Service) SetFlag(ctx context.Context, key store.SensorKey, edit FlagEdit) (FlagResult, error) {
	return s.editFlags(ctx, key, edit, func(tx *store.Tx, sensorID int64, input *int64) ([]store.Flag, store.Change, error) {
		by := edit.By
		set, err := tx.SetFlag(ctx, sensorID, store.FlagSpec{
			InputID: input, Flag: edit.Flag, From: edit.From, To: edit.To, Reason: edit.Reason, SetBy: &by,
		})
		if err != nil {
			return nil, store.Change{}, err
		}
		return set, store.Change{Action: "set", After: set[0]}, nil
	})
}

// ClearFlags clears the flags in force on the sensor's readings in the
// edit's range (of its input, or of every input and whole readings) and
// rechecks its alarms, in one transaction; a flag reaching beyond the
// range keeps what lies outside it. It returns SetFlag's errors.
func (s *Service) ClearFlags(ctx context.Context, key store.SensorKey, edit FlagEdit) (FlagResult, error) {
	return s.editFlags(ctx, key, edit, func(tx *store.Tx, sensorID int64, input *int64) ([]store.Flag, store.Change, error) {
		by := edit.By
		cleared, err := tx.ClearFlags(ctx, sensorID, input, edit.From, edit.To, &by, edit.Reason)
		return cleared, store.Change{Action: "clear", Before: cleared, After: map[string]any{
			"from": edit.From, "to": edit.To, "input": edit.Input, "reason": edit.Reason, "cleared": len(cleared),
		}}, err
	})
}

// editFlags runs change on the flags of the sensor, locked, and of the
// input the edit names; when it changed any, records the change in the
// audit trail and rechecks the alarms of the sensor and of its
// dependants (recheckDependants), in one transaction.
func (s *Service) editFlags(ctx context.Context, key store.SensorKey, edit FlagEdit,
	change func(tx *store.Tx, sensorID int64, input *int64) ([]store.Flag, store.Change, error)) (FlagResult, error) {
	var out FlagResult
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		sensor, err := tx.LockSensor(ctx, key)
		if err != nil {
			return err
		}
		input, err := flagInput(sensor, edit.Input)
		if err != nil {
			return err
		}
		flags, c, err := change(tx, sensor.ID, input)
		if err != nil {
			return err
		}
		out.Flags = flags
		if out.Readings, err = tx.CountReadings(ctx, sensor.ID, edit.From, edit.To); err != nil || len(flags) == 0 {
			return err
		}
		c.OrgID, c.ProjectID, c.SensorID, c.Kind = key.OrgID, key.ProjectID, key.SensorID, store.AuditFlag
		if err := tx.Audit(ctx, c); err != nil {
			return err
		}
		if err := s.recheck(ctx, tx, sensor); err != nil {
			return err
		}
		return s.recheckDependants(ctx, tx, key)
	})
	return out, err
}

// recheckDependants rechecks the alarms of the sensors whose inputs are
// linked to sensor key, and of theirs in turn, each locked in its turn:
// their linked values follow the source's flags. A sensor's dependants
// are locked after it, which the edits of links, that lock the project's
// sensors by id, may meet the other way round: PostgreSQL then aborts
// one, and InTx runs it again.
func (s *Service) recheckDependants(ctx context.Context, tx *store.Tx, key store.SensorKey) error {
	seen := map[int64]bool{key.SensorID: true}
	next := []int64{key.SensorID}
	for depth := 0; depth < store.MaxLinkChain && len(next) > 0; depth++ {
		var found []int64
		for _, id := range next {
			deps, err := tx.Dependants(ctx, store.SensorKey{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: id})
			if err != nil {
				return err
			}
			for _, d := range deps {
				if seen[d.ID] {
					continue
				}
				seen[d.ID] = true
				dep, err := tx.LockSensor(ctx, store.SensorKey{OrgID: key.OrgID, ProjectID: key.ProjectID, SensorID: d.ID})
				if err != nil {
					return err
				}
				if err := s.recheck(ctx, tx, dep); err != nil {
					return err
				}
				found = append(found, d.ID)
			}
		}
		next = found
	}
	return nil
}

// flagInput is the id of the input a flag names, nil for whole readings.
func flagInput(sensor store.Sensor, input string) (*int64, error) {
	if input == "" {
		return nil, nil
	}
	if sensor.Instance != nil {
		for _, in := range sensor.Instance.Inputs {
			if in.Key == input || fmt.Sprint(in.ID) == input {
				return &in.ID, nil
			}
		}
		return nil, &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("input %q is not one of the sensor's inputs", input), Details: map[string]any{"field": "input"}}
	}
	var id int64
	if _, err := fmt.Sscan(input, &id); err != nil || id <= 0 || fmt.Sprint(id) != input {
		return nil, &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("input %q: a sensor without a blueprint names its inputs by their numeric ids", input), Details: map[string]any{"field": "input"}}
	}
	return &id, nil
}

// Mark is a flag a read shows on a reading: on the whole reading
// (InputID 0) or one input.
type Mark struct {
	InputID int64
	Flag    string
}

// A FlagSink is a ReadingSink that shows flags: before each reading it is
// given the reading's marks (nil for none).
type FlagSink interface {
	Marks([]Mark)
}

// flagSet is the flags in force on a sensor's readings over a read, looked
// up by instant: most flags (a check's, a reading's) cover one.
type flagSet struct {
	at    map[int64][]store.Flag // flags of one instant, by its microseconds
	spans []store.Flag           // flags of a range
	marks []Mark                 // the marks of the reading looked up last
	kept  store.Reading          // a reading without its rejected inputs
}

func newFlagSet(flags []store.Flag) *flagSet {
	if len(flags) == 0 {
		return nil
	}
	f := &flagSet{at: map[int64][]store.Flag{}}
	for _, fl := range flags {
		if fl.From.Equal(fl.To) {
			f.at[fl.From.UnixMicro()] = append(f.at[fl.From.UnixMicro()], fl)
		} else {
			f.spans = append(f.spans, fl)
		}
	}
	return f
}

// flagsOf reads the flags in force on the sensor's readings from from to
// to, now or at asOf.
func (s *Service) flagsOf(ctx context.Context, sensorID int64, from, to time.Time, asOf *time.Time) (*flagSet, error) {
	flags, err := s.reader.SensorFlags(ctx, sensorID, from, to, asOf)
	if err != nil {
		return nil, err
	}
	return newFlagSet(flags), nil
}

// rejects says whether a flag of f rejects anything.
func (f *flagSet) rejects() bool {
	if f == nil {
		return false
	}
	for _, fls := range f.at {
		for _, fl := range fls {
			if fl.Flag == store.Rejected {
				return true
			}
		}
	}
	for _, fl := range f.spans {
		if fl.Flag == store.Rejected {
			return true
		}
	}
	return false
}

// rejectedWhole are the ranges a flag rejects whole readings in, for the
// store to leave them out.
func (f *flagSet) rejectedWhole() [][2]time.Time {
	if f == nil {
		return nil
	}
	var out [][2]time.Time
	add := func(fl store.Flag) {
		if fl.InputID == nil && fl.Flag == store.Rejected {
			out = append(out, [2]time.Time{fl.From, fl.To})
		}
	}
	for _, fls := range f.at {
		for _, fl := range fls {
			add(fl)
		}
	}
	for _, fl := range f.spans {
		add(fl)
	}
	return out
}

// lookup sets f.marks to the marks of the reading at t: the strongest flag
// of the whole reading and of each input, rejected before suspect.
func (f *flagSet) lookup(t time.Time) []Mark {
	f.marks = f.marks[:0]
	add := func(fl store.Flag) {
		var id int64
		if fl.InputID != nil {
			id = *fl.InputID
		}
		for i := range f.marks {
			if f.marks[i].InputID == id {
				if fl.Flag == store.Rejected {
					f.marks[i].Flag = store.Rejected
				}
				return
			}
		}
		f.marks = append(f.marks, Mark{InputID: id, Flag: fl.Flag})
	}
	for _, fl := range f.at[t.UnixMicro()] {
		add(fl)
	}
	for _, fl := range f.spans {
		if !t.Before(fl.From) && !t.After(fl.To) {
			add(fl)
		}
	}
	slices.SortFunc(f.marks, func(a, b Mark) int { return int(min(max(a.InputID-b.InputID, -1), 1)) })
	return f.marks
}

// flag is the flag on the reading's input id (the whole reading's flag
// counts for each input), "" for none, as lookup found it last.
func (f *flagSet) flag(id int64) string {
	flag := ""
	for _, m := range f.marks {
		if m.InputID == 0 || m.InputID == id {
			if m.Flag == store.Rejected {
				return m.Flag
			}
			flag = m.Flag
		}
	}
	return flag
}

// without returns r without the values a flag rejects, as lookup found
// them last: r itself when there are none, else a copy f owns until the
// next call; and whether the whole reading is rejected.
func (f *flagSet) without(r *store.Reading) (*store.Reading, bool) {
	rejects := false
	for _, m := range f.marks {
		if m.Flag == store.Rejected {
			if m.InputID == 0 {
				return r, true
			}
			rejects = true
		}
	}
	if !rejects {
		return r, false
	}
	f.kept.Time = r.Time
	f.kept.InputIDs, f.kept.Values = f.kept.InputIDs[:0], f.kept.Values[:0]
	for i, id := range r.InputIDs {
		if f.flag(id) != store.Rejected {
			f.kept.InputIDs, f.kept.Values = append(f.kept.InputIDs, id), append(f.kept.Values, r.Values[i])
		}
	}
	return &f.kept, false
}

// ListFlags returns a page of the sensor's flags. It returns NotFound.
func (s *Service) ListFlags(ctx context.Context, key store.SensorKey, q store.FlagQuery) ([]store.Flag, bool, error) {
	return s.db.ListFlags(ctx, key, q)
}

// unflagLatest replaces each newest reading a flag covers (Flagged) with
// the newest reading a flag does not reject whole, without its rejected
// values: two statements for each sensor flagged there.
func (s *Service) unflagLatest(ctx context.Context, latest []store.Latest) error {
	for i := range latest {
		l := &latest[i]
		if l.Reading == nil || !l.Flagged {
			continue
		}
		var err error
		if l.Reading, err = s.newestUnrejected(ctx, s.reader, l.Sensor, l.Reading.Time); err != nil {
			return err
		}
	}
	return nil
}

// markFlagged sets Flagged of each newest reading a flag covers: one
// statement for them all.
func (s *Service) markFlagged(ctx context.Context, latest []store.Latest) error {
	var (
		ids []int64
		at  []time.Time
	)
	for _, l := range latest {
		if l.Reading != nil {
			ids, at = append(ids, l.Sensor.ID), append(at, l.Reading.Time)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	flagged, err := s.reader.FlaggedAt(ctx, ids, at)
	if err != nil {
		return err
	}
	for i := range latest {
		latest[i].Flagged = latest[i].Reading != nil && flagged[latest[i].Sensor.ID]
	}
	return nil
}

// flagReader reads what newestUnrejected needs: the primary, a standby or
// a transaction.
type flagReader interface {
	ListReadings(ctx context.Context, sensor store.Sensor, q store.ReadingQuery, fn func(*store.Reading) error) error
	SensorFlags(ctx context.Context, sensorID int64, from, to time.Time, asOf *time.Time) ([]store.Flag, error)
}

// newestUnrejected is the sensor's newest reading at or before upTo that a
// flag does not reject whole, without the values a flag rejects; nil for
// none.
func (s *Service) newestUnrejected(ctx context.Context, fr flagReader, sensor store.Sensor, upTo time.Time) (*store.Reading, error) {
	flags, err := fr.SensorFlags(ctx, sensor.ID, store.MinTime, upTo, nil)
	if err != nil {
		return nil, err
	}
	fs := newFlagSet(flags)
	var newest *store.Reading
	q := store.ReadingQuery{From: store.MinTime, To: upTo, Desc: true, Limit: 1, Without: fs.rejectedWhole()}
	err = fr.ListReadings(ctx, sensor, q, func(r *store.Reading) error {
		if fs != nil {
			fs.lookup(r.Time)
			r, _ = fs.without(r)
		}
		newest = &store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)}
		return nil
	})
	return newest, err
}

// ListAudit returns a page of the audit trail. It returns NotFound for a
// project or sensor not in the query's organization.
func (s *Service) ListAudit(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, bool, error) {
	return s.db.ListAudit(ctx, q)
}

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/apperr"
)

// InputLink maps an input to a value of another sensor of the same
// project: one of its inputs or outputs, by key. A reading of the sensor at
// t takes the source's value at the source's latest reading with that value
// at or before t, if it is no older than Staleness.
type InputLink struct {
	SensorID  int64         `json:"sensor_id"`
	Key       string        `json:"key"`
	Staleness time.Duration `json:"staleness"`
}

// MaxLinkChain is the most links a value may travel through, from the
// sensor whose reading carries it to the one whose output needs it: each
// link costs a read of its source per request.
const MaxLinkChain = 5

// MaxStaleness is the longest a link's staleness may be: a source's value
// of a week ago is no correction any more.
const MaxStaleness = 7 * 24 * time.Hour

// SetSensorLinks replaces the links of the sensor's inputs with links, by
// input key, and queues its output rollups for a recomputation; it returns
// the sensor, for the domain to recheck its alarms in the same
// transaction. It locks the project, then every sensor of it: two edits
// made at once could otherwise each close half of a cycle. It returns
// NotFound for the sensor, or for a source that is not a sensor of its
// project; Invalid for a key that is not one of the sensor's inputs, a
// source key that is neither an input nor an output of the source, a
// staleness not in (0, MaxStaleness], a cycle (named, sensor by sensor) or
// a chain of more than MaxLinkChain links; and Conflict when the project
// is archived or the sensor has no blueprint.
func (tx *Tx) SetSensorLinks(ctx context.Context, key SensorKey, links map[string]InputLink) (Sensor, error) {
	sensor, err := setSensorLinks(ctx, tx.tx, key, links)
	return sensor, dbError("set sensor links", err)
}

func setSensorLinks(ctx context.Context, tx pgx.Tx, key SensorKey, links map[string]InputLink) (Sensor, error) {
	var sensor Sensor
	err := func() error {
		if err := lockWritableProject(ctx, tx, key.OrgID, key.ProjectID); err != nil {
			return err
		}
		// Every sensor of the project, locked: two edits made at once
		// could otherwise each close half of a cycle.
		rows, _ := tx.Query(ctx, `SELECT `+sensorColumns+` FROM sensors s WHERE `+inOrg+` ORDER BY s.id FOR NO KEY UPDATE OF s`,
			key.OrgID, key.ProjectID)
		project, err := pgx.CollectRows(rows, pgx.RowToStructByName[Sensor])
		if err != nil {
			return err
		}
		byID := make(map[int64]*Sensor, len(project))
		for i := range project {
			byID[project[i].ID] = &project[i]
		}
		current, ok := byID[key.SensorID]
		if !ok {
			return notFound("set sensor links", pgx.ErrNoRows, "sensor")
		}
		if current.Instance == nil {
			return apperr.Errorf(apperr.Conflict, "sensor %d has no blueprint, so no inputs to link; give it a blueprint_id first", key.SensorID)
		}
		inst := current.Instance.Clone()
		if err := inst.setLinks(links, byID); err != nil {
			return err
		}
		current.Instance = &inst
		if err := checkChains(byID, key.SensorID); err != nil {
			return err
		}
		inst.Version++
		rows, _ = tx.Query(ctx, `UPDATE sensors s SET instance = $2, updated_at = now() WHERE s.id = $1 RETURNING `+sensorColumns,
			key.SensorID, &inst)
		if sensor, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor]); err != nil {
			return err
		}
		// Output rollups are rebuilt for the new version: of no use while
		// an input is linked, they serve again once none is.
		return queueOutputHours(ctx, tx, sensor.ID)
	}()
	return sensor, err
}

// setLinks replaces inst's links with links, whose sources are sensors of
// byID.
func (inst *Instance) setLinks(links map[string]InputLink, byID map[int64]*Sensor) error {
	for i := range inst.Inputs {
		inst.Inputs[i].Link = nil
	}
	for _, key := range sortedKeys(links) {
		l := links[key]
		i := slices.IndexFunc(inst.Inputs, func(in InstanceInput) bool { return in.Key == key })
		if i < 0 {
			return inst.notAnInput(key)
		}
		source, ok := byID[l.SensorID]
		if !ok {
			return &apperr.Error{
				Code:    apperr.NotFound,
				Message: fmt.Sprintf("input %q: sensor %d is not a sensor of this project", key, l.SensorID),
				Details: map[string]any{"input": key, "sensor_id": l.SensorID},
			}
		}
		if l.Staleness <= 0 || l.Staleness > MaxStaleness {
			return &apperr.Error{
				Code:    apperr.Invalid,
				Message: fmt.Sprintf("input %q: the staleness must be positive and at most %s", key, MaxStaleness),
				Details: map[string]any{"input": key},
			}
		}
		if !source.hasKey(l.Key) {
			return &apperr.Error{
				Code:    apperr.Invalid,
				Message: fmt.Sprintf("input %q: %q is neither an input nor an output of sensor %d", key, l.Key, l.SensorID),
				Details: map[string]any{"input": key, "sensor_id": l.SensorID, "key": l.Key},
			}
		}
		inst.Inputs[i].Link = &l
	}
	return nil
}

func (s *Sensor) hasKey(key string) bool {
	if s.Instance == nil {
		return false
	}
	return slices.ContainsFunc(s.Instance.Inputs, func(in InstanceInput) bool { return in.Key == key }) ||
		slices.ContainsFunc(s.Instance.Outputs, func(o InstanceOutput) bool { return o.Key == key })
}

// sources is the ids of the sensors s's inputs are linked to, ascending.
func (s *Sensor) sources() []int64 {
	var ids []int64
	if s.Instance != nil {
		for _, in := range s.Instance.Inputs {
			if in.Link != nil && !slices.Contains(ids, in.Link.SensorID) {
				ids = append(ids, in.Link.SensorID)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// checkChains returns Invalid when the links of the sensors of byID, as
// edited on sensor id, make a cycle through it, or a chain longer than
// MaxLinkChain. The project held neither before the edit.
func checkChains(byID map[int64]*Sensor, id int64) error {
	// A cycle through id: a path of sources from id back to it.
	var path []int64
	var walk func(at int64) bool
	seen := map[int64]bool{}
	walk = func(at int64) bool {
		path = append(path, at)
		for _, src := range byID[at].sources() {
			if src == id {
				path = append(path, src)
				return true
			}
			if !seen[src] {
				seen[src] = true
				if walk(src) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if walk(id) {
		names := make([]string, len(path))
		for i, s := range path {
			names[i] = fmt.Sprintf("%d (%s)", s, byID[s].Name)
		}
		return &apperr.Error{
			Code:    apperr.Invalid,
			Message: "the links would make a cycle: sensor " + strings.Join(names, " takes an input from ") + "; a value cannot depend on itself",
			Details: map[string]any{"cycle": path},
		}
	}
	// The longest chain: links below each sensor, memoized; without a
	// cycle, every walk ends.
	depth := map[int64]int{}
	var below func(at int64) int
	below = func(at int64) int {
		if d, ok := depth[at]; ok {
			return d
		}
		d := 0
		for _, src := range byID[at].sources() {
			d = max(d, 1+below(src))
		}
		depth[at] = d
		return d
	}
	for sid := range byID {
		if d := below(sid); d > MaxLinkChain {
			return &apperr.Error{
				Code:    apperr.Invalid,
				Message: fmt.Sprintf("sensor %d's values would travel through %d links; at most %d are allowed", sid, d, MaxLinkChain),
				Details: map[string]any{"sensor_id": sid, "links": d},
			}
		}
	}
	return nil
}

// Dependant is a sensor with an input linked to another sensor.
type Dependant struct {
	ID   int64  `db:"id"`
	Name string `db:"name"`
}

// dependants returns the sensors of the project with an input linked to
// sensor id, by id.
func dependants(ctx context.Context, q querier, key SensorKey) ([]Dependant, error) {
	linked, err := json.Marshal([]map[string]any{{"link": map[string]any{"sensor_id": key.SensorID}}})
	if err != nil {
		return nil, err
	}
	rows, _ := q.Query(ctx, `SELECT s.id, s.name FROM sensors s WHERE `+inOrg+` AND s.instance->'inputs' @> $3::jsonb ORDER BY s.id`,
		key.OrgID, key.ProjectID, linked)
	return pgx.CollectRows(rows, pgx.RowToStructByName[Dependant])
}

// Dependants returns the sensors of the project with an input linked to
// sensor key, by id.
func (tx *Tx) Dependants(ctx context.Context, key SensorKey) ([]Dependant, error) {
	deps, err := dependants(ctx, tx.tx, key)
	return deps, dbError("dependants", err)
}

// refuseDependants returns Conflict, listing them, when sensors have
// inputs linked to sensor key.
func refuseDependants(ctx context.Context, q querier, key SensorKey) error {
	deps, err := dependants(ctx, q, key)
	if err != nil || len(deps) == 0 {
		return err
	}
	names := make([]string, len(deps))
	ids := make([]int64, len(deps))
	for i, d := range deps {
		names[i], ids[i] = fmt.Sprintf("%d (%s)", d.ID, d.Name), d.ID
	}
	return &apperr.Error{
		Code:    apperr.Conflict,
		Message: fmt.Sprintf("sensor %d feeds linked inputs of sensors %s; remove those links first", key.SensorID, strings.Join(names, ", ")),
		Details: map[string]any{"dependants": ids},
	}
}

// LinkSource returns sensor id of the project of sensor of, the source of
// one of its links. It returns NotFound.
func (db *DB) LinkSource(ctx context.Context, of Sensor, id int64) (Sensor, error) {
	return linkSource(ctx, db.pool, of, id)
}

func linkSource(ctx context.Context, q querier, of Sensor, id int64) (Sensor, error) {
	rows, _ := q.Query(ctx, `SELECT `+sensorColumns+` FROM sensors s WHERE s.id = $1 AND s.project_id = $2`, id, of.ProjectID)
	sensor, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Sensor])
	return sensor, notFound("link source", err, "sensor")
}

// LinkQuery selects the readings of a link's source that serve the
// readings of its dependant from First to To: those from the latest at or
// before First, and no older than From, onwards, as a read of the source
// gives them: without those a flag in force now, or at AsOf, rejects
// whole. With InputID, that latest reading is the latest to carry that
// input, and the readings whose input a flag rejects are left out too.
type LinkQuery struct {
	From, First, To time.Time
	InputID         int64      // 0: any reading
	AsOf            *time.Time // the flags in force then; nil: now
}

// listLinkReadingsSQL starts at the one reading before the range that
// serves it, found backwards through the index, rather than read every
// reading of the staleness before it. The ranges of the flags that
// reject a reading for the link are read once, before the readings, so
// that a source without such flags costs each row a scan of an empty
// list (as pageReadingsSQL).
var listLinkReadingsSQL = `WITH rejected AS MATERIALIZED (
    SELECT from_at, to_at FROM reading_flags
    WHERE sensor_id = $1 AND flag = 'rejected' AND from_at <= $4 AND to_at >= $2
      AND (input_id IS NULL OR $5 <> 0 AND input_id = $5)
      AND ` + fmt.Sprintf(flagInForceSQL, 6) + `)
SELECT datetime, input_ids, vals FROM readings
WHERE sensor_id = $1 AND datetime BETWEEN coalesce((
    SELECT datetime FROM readings
    WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3 AND ($5 = 0 OR $5 = ANY(input_ids))` + withoutRejected + `
    ORDER BY datetime DESC LIMIT 1), $3) AND $4` + withoutRejected + `
ORDER BY datetime`

// ListLinkReadings gives head the flags in force (now or at q.AsOf) on
// the readings of the source sensor from q.From to q.To, then fn each
// reading q selects, in ascending order, as the rows arrive, in one
// round trip. fn must not keep the Reading it is given; a caller that
// takes an output of the source leaves out the inputs the flags reject.
func (db *DB) ListLinkReadings(ctx context.Context, sensor Sensor, q LinkQuery, head func([]Flag) error, fn func(*Reading) error) error {
	return listLinkReadings(ctx, db.pool, sensor, q, head, fn)
}

// batcher sends a batch of statements: the pool or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

func listLinkReadings(ctx context.Context, db batcher, sensor Sensor, q LinkQuery, head func([]Flag) error, fn func(*Reading) error) error {
	b := &pgx.Batch{}
	b.Queue(flagsInForceSQL, sensor.ID, q.From, q.To, q.AsOf)
	b.Queue(listLinkReadingsSQL, sensor.ID, q.From, q.First, q.To, q.InputID, q.AsOf)
	br := db.SendBatch(ctx, b)
	defer br.Close()
	rows, _ := br.Query()
	flags, err := pgx.CollectRows(rows, pgx.RowToStructByName[Flag])
	if err != nil {
		return readError("link source flags", err)
	}
	if err := head(flags); err != nil {
		return err
	}
	if rows, err = br.Query(); err != nil {
		return dbError("list link readings", err)
	}
	if err := scanReadings(rows, "list link readings", fn); err != nil {
		return err
	}
	return dbError("list link readings", br.Close())
}

// LinkSource is DB.LinkSource in the transaction, whose connection a
// write already holds: it asks the pool for no other.
func (tx *Tx) LinkSource(ctx context.Context, of Sensor, id int64) (Sensor, error) {
	return linkSource(ctx, tx.tx, of, id)
}

// ListLinkReadings is DB.ListLinkReadings in the transaction: what is
// stored by then is what it reads.
func (tx *Tx) ListLinkReadings(ctx context.Context, sensor Sensor, q LinkQuery, head func([]Flag) error, fn func(*Reading) error) error {
	return listLinkReadings(ctx, tx.tx, sensor, q, head, fn)
}

// Linked tells whether any input of inst takes another sensor's value.
func (inst *Instance) Linked() bool {
	return inst != nil && slices.ContainsFunc(inst.Inputs, func(in InstanceInput) bool { return in.Link != nil })
}

package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// newDB returns a store on a fresh, migrated database of the test's own.
func newDB(t *testing.T) *store.DB {
	t.Helper()
	return store.New(storetest.NewPool(t))
}

// runOnOneDB runs each test as a parallel subtest named for its key, all on
// one fresh database: a database costs seconds to create and migrate, a
// test milliseconds. The tests keep apart by working each in organizations
// and with users of their own (newOrg, newUser).
func runOnOneDB(t *testing.T, tests map[string]func(*testing.T, *store.DB)) {
	t.Parallel()
	db := newDB(t)
	for name, test := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, db)
		})
	}
}

// newOrg creates an organization.
func newOrg(t *testing.T, db *store.DB) store.Org {
	t.Helper()
	org, err := db.CreateOrg(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	return org
}

// newUser creates the user who, with an email made of who and the test's
// name, so that parallel subtests never share a user.
func newUser(t *testing.T, db *store.DB, who string) store.User {
	t.Helper()
	email := who + "@" + strings.NewReplacer("/", ".", "_", "-").Replace(t.Name()) + ".example.com"
	user, err := db.EnsureUser(t.Context(), email, who)
	if err != nil {
		t.Fatal(err)
	}
	return user
}

// newMember creates a user with role in org.
func newMember(t *testing.T, db *store.DB, org store.Org, who string, role store.Role) store.User {
	t.Helper()
	user := newUser(t, db, who)
	if err := db.SetMembership(t.Context(), org.ID, user.ID, role); err != nil {
		t.Fatal(err)
	}
	return user
}

// newProject creates a project in org.
func newProject(t *testing.T, db *store.DB, org store.Org) store.Project {
	t.Helper()
	project, err := db.CreateProject(t.Context(), org.ID, "plant", "")
	if err != nil {
		t.Fatal(err)
	}
	return project
}

// newSensor creates a sensor in project, with an instance of blueprint b
// unless b is nil, and returns its key.
func newSensor(t *testing.T, db *store.DB, project store.Project, b *store.Blueprint) store.SensorKey {
	t.Helper()
	var attach *store.Attachment
	if b != nil {
		attach = attachment(t, *b)
	}
	sensor, err := db.CreateSensor(t.Context(), project.OrgID, project.ID, "meter", "", attach)
	if err != nil {
		t.Fatal(err)
	}
	return store.SensorKey{OrgID: project.OrgID, ProjectID: project.ID, SensorID: sensor.ID}
}

// newBlueprintSensor creates, in a new organization, a sensor with an
// instance of newBlueprint, and returns it as stored, with its key.
func newBlueprintSensor(t *testing.T, db *store.DB) (store.Sensor, store.SensorKey) {
	t.Helper()
	org := newOrg(t, db)
	b := newBlueprint(t, db, org.ID)
	key := newSensor(t, db, newProject(t, db, org), &b)
	return getSensor(t, db, key), key
}

// getSensor returns the sensor of key.
func getSensor(t *testing.T, db *store.DB, key store.SensorKey) store.Sensor {
	t.Helper()
	sensor, err := db.GetSensor(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return sensor
}

// attachment is a new instance of b with its defaults.
func attachment(t *testing.T, b store.Blueprint) *store.Attachment {
	t.Helper()
	inst, err := b.Instantiate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &store.Attachment{BlueprintID: b.ID, Instance: inst}
}

// testBlueprint is a blueprint of two inputs, a constant with a default and
// one without, and an output.
func testBlueprint() store.Blueprint {
	two := 2.0
	return store.Blueprint{
		Name:        "power",
		Description: "electric power",
		Inputs: []store.BlueprintInput{
			{Key: "u", Name: "voltage", Unit: "V"},
			{Key: "i", Name: "current", Unit: "A"},
		},
		Constants: []store.BlueprintConstant{
			{Key: "k", Name: "gain", Default: &two},
			{Key: "offset", Name: "offset", Unit: "W"},
		},
		Outputs: []store.BlueprintOutput{
			{Key: "p", Name: "power", Unit: "W", Formula: "u * i * k"},
		},
	}
}

// newBlueprint saves testBlueprint in organization orgID.
func newBlueprint(t *testing.T, db *store.DB, orgID int64) store.Blueprint {
	t.Helper()
	b, err := db.CreateBlueprint(t.Context(), orgID, testBlueprint())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantCode fails the test unless err carries the code want.
func wantCode(t *testing.T, err error, want apperr.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("err=nil, want code %s", want)
	}
	if got := apperr.CodeOf(err); got != want {
		t.Fatalf("err=%v, code %s, want %s", err, got, want)
	}
}

// unknownID is an id that nothing has in a test database.
const unknownID = 1 << 40

// orgOf and unknownOrg pick, from a test's organization, the one a call
// names: that organization or one that does not exist.
func orgOf(org store.Org) int64  { return org.ID }
func unknownOrg(store.Org) int64 { return unknownID }

// checkPages lists, page by page through list, the ids of a collection
// whose ids are the three of want, in order, and checks each page and
// whether more follow it.
func checkPages(t *testing.T, want []int64, list func(after int64, limit int) ([]int64, bool, error)) {
	t.Helper()
	pages := []struct {
		after    int64
		limit    int
		wantIDs  []int64
		wantMore bool
	}{
		{0, 2, want[:2], true},
		{want[1], 2, want[2:], false},
		{want[2], 2, nil, false},
		{0, 3, want, false},
	}
	for _, p := range pages {
		got, more, err := list(p.after, p.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, p.wantIDs) || more != p.wantMore {
			t.Errorf("list(after %d, limit %d) = %v, more %v; want %v, more %v", p.after, p.limit, got, more, p.wantIDs, p.wantMore)
		}
	}
}

// ids returns the id of each item.
func ids[T any](items []T, id func(T) int64) []int64 {
	out := make([]int64, len(items))
	for i, item := range items {
		out[i] = id(item)
	}
	return out
}

// ptr returns a pointer to v, for patches.
func ptr[T any](v T) *T { return &v }

// insert stores readings in the sensor of key as a write of the domain
// stores them, in one transaction and without its checks and alarms: the
// store's part of a write (LockSensorWrite with the batch, which queues
// its hours and keeps its newest reading, RecordInputs, WriteReadings). It
// returns what the write did, or the first error.
func insert(ctx context.Context, db *store.DB, key store.SensorKey, readings []store.Reading) (store.Written, error) {
	var written store.Written
	err := db.InTx(ctx, func(tx *store.Tx) error {
		ordered := store.LastPerInstant(readings)
		w, err := tx.LockSensorWrite(ctx, key, ordered)
		if err != nil {
			return err
		}
		if err := w.Sensor.Instance.CheckInputs(readings); err != nil {
			return err
		}
		if err := tx.RecordInputs(ctx, w, store.InputIDsOf(readings)); err != nil {
			return err
		}
		written, err = tx.WriteReadings(ctx, w, ordered)
		return err
	})
	return written, err
}

// mustInsert is insert that fails the test on an error.
func mustInsert(t testing.TB, db *store.DB, key store.SensorKey, readings ...store.Reading) store.Written {
	t.Helper()
	written, err := insert(t.Context(), db, key, readings)
	if err != nil {
		t.Fatal(err)
	}
	return written
}

// insertStream stores the readings of stream as a write of the domain
// streams them, in one transaction that is not run again.
func insertStream(ctx context.Context, db *store.DB, key store.SensorKey, stream store.ReadingStream) (store.Written, error) {
	var written store.Written
	err := db.InTxOnce(ctx, func(tx *store.Tx) (err error) {
		_, written, err = writeStream(ctx, tx, key, stream)
		return err
	})
	return written, err
}

// writeStream is insertStream's work in tx (CopyReadingStream,
// RecordInputs, Merge, KeepLatest), returning the stream's write too.
func writeStream(ctx context.Context, tx *store.Tx, key store.SensorKey, stream store.ReadingStream) (*store.StreamWrite, store.Written, error) {
	w, err := tx.LockSensorWrite(ctx, key, nil)
	if err != nil {
		return nil, store.Written{}, err
	}
	sw, err := tx.CopyReadingStream(ctx, w, stream)
	if err != nil {
		return nil, store.Written{}, err
	}
	if err := w.Sensor.Instance.CheckInputIDs(sw.InputIDs()); err != nil {
		return nil, store.Written{}, err
	}
	if err := tx.RecordInputs(ctx, w, slices.Values(sw.InputIDs())); err != nil {
		return nil, store.Written{}, err
	}
	written, err := sw.Merge(ctx)
	if err != nil {
		return nil, store.Written{}, err
	}
	return sw, written, tx.KeepLatest(ctx, key.SensorID, sw.Newest())
}

// deleteReadings deletes the sensor's readings of [from, to), as the
// domain's delete does but for the alarms, and returns how many there were.
func deleteReadings(ctx context.Context, db *store.DB, key store.SensorKey, from, to time.Time) (int64, error) {
	var deleted int64
	err := db.InTx(ctx, func(tx *store.Tx) error {
		d, err := tx.DeleteReadings(ctx, key, from, to)
		deleted = d.Count
		return err
	})
	return deleted, err
}

// updateSensor applies patch to the sensor in a transaction of its own.
func updateSensor(ctx context.Context, db *store.DB, key store.SensorKey, patch store.SensorPatch) (store.Sensor, error) {
	var sensor store.Sensor
	err := db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		_, sensor, err = tx.UpdateSensor(ctx, key, patch)
		return err
	})
	return sensor, err
}

// setSensorLinks sets the sensor's links in a transaction of its own.
func setSensorLinks(ctx context.Context, db *store.DB, key store.SensorKey, links map[string]store.InputLink) (store.Sensor, error) {
	var sensor store.Sensor
	err := db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		sensor, err = tx.SetSensorLinks(ctx, key, links)
		return err
	})
	return sensor, err
}

package store_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// audit records each change in a transaction of its own, a little apart in
// time, and returns the entries as ListAudit gives them, oldest first.
func audit(t *testing.T, db *store.DB, actor int64, changes ...store.Change) []store.AuditEntry {
	t.Helper()
	ctx := store.WithActor(t.Context(), actor)
	for _, c := range changes {
		if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.Audit(ctx, c) }); err != nil {
			t.Fatal(err)
		}
		// The next entry's now() must come later than this one's: the
		// database's clock is this machine's, so wait until it has passed.
		newest, _, err := db.ListAudit(t.Context(), store.AuditQuery{OrgID: c.OrgID,
			From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), Limit: 1})
		if err != nil || len(newest) == 0 {
			t.Fatalf("the entry just recorded: %v", err)
		}
		for !time.Now().After(newest[0].At) {
		}
	}
	entries, _, err := db.ListAudit(t.Context(), store.AuditQuery{OrgID: changes[0].OrgID,
		From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	return entries
}

func TestAudit(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"records": func(t *testing.T, db *store.DB) {
			org := newOrg(t, db)
			project := newProject(t, db, org)
			key := newSensor(t, db, project, nil)
			user := newUser(t, db, "ann")
			entries := audit(t, db, user.ID,
				store.Change{OrgID: org.ID, ProjectID: project.ID, SensorID: key.SensorID, Kind: store.AuditFormulas, Action: "update",
					Before: map[string]int{"a": 1}, After: map[string]int{"a": 2}},
				store.Change{OrgID: org.ID, Kind: store.AuditMember, Action: "add", After: map[string]string{"role": "viewer"}})
			if len(entries) != 2 {
				t.Fatalf("%d entries, want 2", len(entries))
			}
			e := entries[0]
			if e.OrgID != org.ID || e.ProjectID == nil || *e.ProjectID != project.ID || e.SensorID == nil || *e.SensorID != key.SensorID ||
				e.Kind != store.AuditFormulas || e.Action != "update" || e.Actor == nil || *e.Actor != user.ID {
				t.Errorf("entry = %+v", e)
			}
			var before, after map[string]int
			if err := json.Unmarshal(e.Before, &before); err != nil || before["a"] != 1 {
				t.Errorf("before = %s (%v), want {\"a\": 1}", e.Before, err)
			}
			if err := json.Unmarshal(e.After, &after); err != nil || after["a"] != 2 {
				t.Errorf("after = %s (%v), want {\"a\": 2}", e.After, err)
			}
			e = entries[1]
			if e.ProjectID != nil || e.SensorID != nil || e.Kind != store.AuditMember || e.Before != nil || e.After == nil {
				t.Errorf("organization's entry = %+v, before %s, after %s", e, e.Before, e.After)
			}
		},
		"no actor": func(t *testing.T, db *store.DB) {
			org := newOrg(t, db)
			err := db.InTx(t.Context(), func(tx *store.Tx) error {
				return tx.Audit(t.Context(), store.Change{OrgID: org.ID, Kind: store.AuditToken, Action: "create"})
			})
			if err != nil {
				t.Fatal(err)
			}
			entries, _, err := db.ListAudit(t.Context(), store.AuditQuery{OrgID: org.ID,
				From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 || entries[0].Actor != nil || entries[0].Kind != store.AuditToken {
				t.Errorf("entries = %+v, want one token entry without actor", entries)
			}
		},
	})
}

func TestListAudit(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	org := newOrg(t, db)
	project, other := newProject(t, db, org), newProject(t, db, org)
	key := newSensor(t, db, project, nil)
	otherKey := newSensor(t, db, other, nil)
	user := newUser(t, db, "ann")
	entries := audit(t, db, user.ID,
		store.Change{OrgID: org.ID, ProjectID: project.ID, SensorID: key.SensorID, Kind: store.AuditFormulas, Action: "update"},
		store.Change{OrgID: org.ID, ProjectID: project.ID, Kind: store.AuditRule, Action: "create"},
		store.Change{OrgID: org.ID, ProjectID: other.ID, SensorID: otherKey.SensorID, Kind: store.AuditFlag, Action: "set"},
		store.Change{OrgID: org.ID, Kind: store.AuditMember, Action: "add"})
	if len(entries) != 4 {
		t.Fatalf("%d entries, want 4", len(entries))
	}
	id := func(i int) int64 { return entries[i].ID }
	from, to := entries[0].At, entries[3].At
	tests := []struct {
		name     string
		q        store.AuditQuery
		want     []int64
		wantMore bool
		wantCode apperr.Code
	}{
		{"organization", store.AuditQuery{Limit: 10}, []int64{id(3), id(2), id(1), id(0)}, false, ""},
		{"project", store.AuditQuery{ProjectID: project.ID, Limit: 10}, []int64{id(1), id(0)}, false, ""},
		{"sensor", store.AuditQuery{ProjectID: project.ID, SensorID: key.SensorID, Limit: 10}, []int64{id(0)}, false, ""},
		{"sensor alone", store.AuditQuery{SensorID: otherKey.SensorID, Limit: 10}, []int64{id(2)}, false, ""},
		{"kinds", store.AuditQuery{Kinds: []string{store.AuditRule, store.AuditMember}, Limit: 10}, []int64{id(3), id(1)}, false, ""},
		{"first page", store.AuditQuery{Limit: 2}, []int64{id(3), id(2)}, true, ""},
		{"next page", store.AuditQuery{After: id(2), Limit: 2}, []int64{id(1), id(0)}, false, ""},
		{"time range", store.AuditQuery{From: entries[1].At, To: entries[2].At, Limit: 10}, []int64{id(2), id(1)}, false, ""},
		{"sensor of another project", store.AuditQuery{ProjectID: project.ID, SensorID: otherKey.SensorID, Limit: 10}, nil, false, apperr.NotFound},
		{"unknown project", store.AuditQuery{ProjectID: unknownID, Limit: 10}, nil, false, apperr.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			q.OrgID = org.ID
			if q.From.IsZero() {
				q.From, q.To = from, to
			}
			got, more, err := db.ListAudit(t.Context(), q)
			if tt.wantCode != "" {
				wantCode(t, err, tt.wantCode)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotIDs := ids(got, func(e store.AuditEntry) int64 { return e.ID }); !slices.Equal(gotIDs, tt.want) || more != tt.wantMore {
				t.Errorf("ListAudit = %v, more %v; want %v, more %v", gotIDs, more, tt.want, tt.wantMore)
			}
		})
	}
}

func TestInstanceAt(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	org := newOrg(t, db)
	project := newProject(t, db, org)
	key := newSensor(t, db, project, nil)
	user := newUser(t, db, "ann")
	v := func(n int64) *store.Instance { return &store.Instance{Version: n} }
	c := func(kind string, before, after *store.Instance) store.Change {
		return store.Change{OrgID: org.ID, ProjectID: project.ID, SensorID: key.SensorID, Kind: kind, Action: "update", Before: before, After: after}
	}
	entries := audit(t, db, user.ID,
		c(store.AuditBlueprint, nil, v(1)),
		c(store.AuditConstants, v(1), v(2)),
		c(store.AuditFlag, nil, nil), // not an instance's change
		c(store.AuditFormulas, v(2), v(3)))
	if len(entries) != 4 {
		t.Fatalf("%d entries, want 4", len(entries))
	}
	tests := []struct {
		name        string
		sensorID    int64
		at          time.Time
		wantVersion int64 // 0: no instance
		wantOK      bool
	}{
		{"before any change", key.SensorID, entries[0].At.Add(-time.Second), 0, true},
		{"at the attachment", key.SensorID, entries[0].At, 1, true},
		{"between changes", key.SensorID, entries[1].At.Add(-time.Microsecond), 1, true},
		{"at the second change", key.SensorID, entries[1].At, 2, true},
		{"at another kind's change", key.SensorID, entries[2].At, 2, true},
		{"at the last change", key.SensorID, entries[3].At, 3, true},
		{"after every change", key.SensorID, entries[3].At.Add(time.Hour), 3, true},
		{"sensor without changes", unknownID, entries[3].At, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst, ok, err := db.InstanceAt(t.Context(), tt.sensorID, tt.at)
			if err != nil {
				t.Fatal(err)
			}
			var got int64
			if inst != nil {
				got = inst.Version
			}
			if ok != tt.wantOK || got != tt.wantVersion || (inst == nil) != (tt.wantVersion == 0) {
				t.Errorf("InstanceAt = %+v, %v; want version %d, %v", inst, ok, tt.wantVersion, tt.wantOK)
			}
		})
	}
	t.Run("InstancesAt", func(t *testing.T) {
		insts, err := db.InstancesAt(t.Context(), []int64{unknownID, key.SensorID}, entries[1].At)
		if err != nil {
			t.Fatal(err)
		}
		if inst, ok := insts[key.SensorID]; len(insts) != 1 || !ok || inst == nil || inst.Version != 2 {
			t.Errorf("InstancesAt = %v, want the sensor's version 2 only", insts)
		}
	})
}

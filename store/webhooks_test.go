package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// hookedProject is a project of a new organization with n webhooks.
func hookedProject(t *testing.T, db *store.DB, n int) (store.Project, []int64) {
	t.Helper()
	project := newProject(t, db, newOrg(t, db))
	var hooks []int64
	for range n {
		hook, err := db.CreateWebhook(t.Context(), project.OrgID, project.ID, "https://hooks.example.com/in", "a-secret-of-16-chars")
		if err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, hook.ID)
	}
	return project, hooks
}

// raiseEvents appends n events to the project's history, as an alarm's
// changes would; the outbox queues a delivery of each to every webhook.
func raiseEvents(t *testing.T, pool *pgxpool.Pool, db *store.DB, project store.Project, n int) {
	t.Helper()
	sensor := newSensor(t, db, project, nil)
	_, err := pool.Exec(t.Context(), `
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_name, value, reading_at)
SELECT $1, $2, 'x', 'triggered', 'Alarm', g, now() FROM generate_series(1, $3) g`, project.ID, sensor.SensorID, n)
	if err != nil {
		t.Fatal(err)
	}
}

// byWebhook counts claims by webhook.
func byWebhook(claims []store.Claim) map[int64]int {
	n := map[int64]int{}
	for _, c := range claims {
		n[c.WebhookID]++
	}
	return n
}

// TestClaimDeliveriesFairly: a claim shares its slots between webhooks in
// turn, whatever one's backlog, gives an organization no more than its
// share, and leaves no webhook more deliveries in flight than its bound on
// all workers together; a lease that runs out lets another worker take
// the delivery, and the first one's outcome is then refused.
func TestClaimDeliveriesFairly(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	a, aHooks := hookedProject(t, db, 3)
	b, bHooks := hookedProject(t, db, 1)
	raiseEvents(t, pool, db, a, 10) // 30 deliveries
	raiseEvents(t, pool, db, b, 1)
	q := store.ClaimQuery{Max: 10, PerWebhook: 2, PerOrg: 3, Lease: time.Minute}

	first, err := db.ClaimDeliveries(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	got := byWebhook(first)
	if got[aHooks[0]] != 1 || got[aHooks[1]] != 1 || got[aHooks[2]] != 1 || got[bHooks[0]] != 1 || len(first) != 4 {
		t.Errorf("the first claim took %v, want one of each webhook: A's share is 3, and B's webhook its turn", got)
	}
	for _, c := range first {
		if c.Attempts != 1 || c.Event.Value == nil || (c.OrgID == a.OrgID && *c.Event.Value != 1) {
			t.Errorf("claimed %+v, want the oldest event at its first attempt", c)
		}
	}

	// Another worker: its own share of A, but each of A's webhooks has one
	// in flight already, of the two they may have.
	second, err := db.ClaimDeliveries(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if got := byWebhook(second); len(second) != 3 || got[aHooks[0]] != 1 || got[aHooks[1]] != 1 || got[aHooks[2]] != 1 {
		t.Errorf("the second worker took %v, want one more of each of A's webhooks", got)
	}
	if third, err := db.ClaimDeliveries(t.Context(), q); err != nil || len(third) != 0 {
		t.Errorf("a third worker took %d, %v; want none: every webhook has its two in flight", len(third), err)
	}

	// The outcome of an attempt frees its webhook's slot; a stale attempt's
	// is refused.
	c := first[0]
	wantCode(t, db.FinishDelivery(t.Context(), c.ID, c.Attempts+1, "delivered", nil, "", time.Now()), apperr.Conflict)
	if err := db.FinishDelivery(t.Context(), c.ID, c.Attempts, "delivered", nil, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	next, err := db.ClaimDeliveries(t.Context(), store.ClaimQuery{Max: 10, PerWebhook: 2, PerOrg: 10, Lease: time.Minute})
	if err != nil || len(next) != 1 || next[0].WebhookID != c.WebhookID || *next[0].Event.Value != 3 {
		t.Errorf("after one attempt ended: claimed %+v, %v; want the next event (3) of its webhook", next, err)
	}

	// A lease that runs out: the delivery is due again, and taken again,
	// and the attempt that lapsed can no longer record its outcome.
	lapsing, _ := hookedProject(t, db, 1)
	raiseEvents(t, pool, db, lapsing, 1)
	short := store.ClaimQuery{Max: 1, PerWebhook: 1, PerOrg: 1, Lease: time.Millisecond}
	lapsed, err := db.ClaimDeliveries(t.Context(), short)
	if err != nil || len(lapsed) != 1 || lapsed[0].OrgID != lapsing.OrgID {
		t.Fatalf("claim with a short lease: %+v, %v; want the new project's delivery", lapsed, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		retaken, err := db.ClaimDeliveries(t.Context(), short)
		if err != nil {
			t.Fatal(err)
		}
		if len(retaken) > 0 {
			if retaken[0].ID != lapsed[0].ID || retaken[0].Attempts != 2 {
				t.Errorf("after the lease ran out, claimed %+v; want delivery %d at attempt 2", retaken[0], lapsed[0].ID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %d not claimed again 10 s after its lease of 1 ms", lapsed[0].ID)
		}
	}
	wantCode(t, db.FinishDelivery(t.Context(), lapsed[0].ID, lapsed[0].Attempts, "delivered", nil, "", time.Now()), apperr.Conflict)
}

// TestWebhooks lists, gets and deletes a project's webhooks, and lists a
// webhook's deliveries newest first, with what their attempts recorded;
// another project's ids are not found.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	ctx := t.Context()
	project, hooks := hookedProject(t, db, 3)
	checkPages(t, hooks, func(after int64, limit int) ([]int64, bool, error) {
		list, more, err := db.ListWebhooks(ctx, project.OrgID, project.ID, after, limit)
		return ids(list, func(w store.Webhook) int64 { return w.ID }), more, err
	})
	hook, err := db.GetWebhook(ctx, project.OrgID, project.ID, hooks[0])
	if err != nil || hook.URL != "https://hooks.example.com/in" || hook.Secret != "a-secret-of-16-chars" || hook.ProjectID != project.ID {
		t.Errorf("GetWebhook = %+v, %v; want the first webhook with its url and secret", hook, err)
	}
	raiseEvents(t, pool, db, project, 3)
	claims, err := db.ClaimDeliveries(ctx, store.ClaimQuery{Max: 100, PerWebhook: 100, PerOrg: 100, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		if c.WebhookID == hooks[0] && c.EventID == claims[0].EventID {
			status := 502
			if err := db.FinishDelivery(ctx, c.ID, c.Attempts, "pending", &status, "bad gateway", time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var all []int64
	list, _, err := db.ListDeliveries(ctx, project.OrgID, project.ID, hooks[0], 0, 100)
	if err != nil || len(list) != 3 {
		t.Fatalf("ListDeliveries = %d deliveries, %v; want 3", len(list), err)
	}
	for i, d := range list {
		all = append(all, d.ID)
		if i > 0 && d.ID >= list[i-1].ID {
			t.Errorf("deliveries %v are not newest first", all)
		}
		if d.EventID == claims[0].EventID && (d.Attempts != 1 || d.LastStatus == nil || *d.LastStatus != 502 || d.LastError != "bad gateway") {
			t.Errorf("delivery %+v, want its attempt recorded: 502, bad gateway", d)
		}
	}
	checkPages(t, all, func(before int64, limit int) ([]int64, bool, error) {
		list, more, err := db.ListDeliveries(ctx, project.OrgID, project.ID, hooks[0], before, limit)
		return ids(list, func(d store.Delivery) int64 { return d.ID }), more, err
	})
	if err := db.DeleteWebhook(ctx, project.OrgID, project.ID, hooks[2]); err != nil {
		t.Fatal(err)
	}
	elsewhere := newProject(t, db, newOrg(t, db))
	for name, call := range map[string]func() error{
		"Get": func() error {
			_, err := db.GetWebhook(ctx, elsewhere.OrgID, elsewhere.ID, hooks[0])
			return err
		},
		"GetDeleted": func() error {
			_, err := db.GetWebhook(ctx, project.OrgID, project.ID, hooks[2])
			return err
		},
		"ListDeliveries": func() error {
			_, _, err := db.ListDeliveries(ctx, elsewhere.OrgID, elsewhere.ID, hooks[0], 0, 10)
			return err
		},
		"List": func() error {
			_, _, err := db.ListWebhooks(ctx, project.OrgID, elsewhere.ID, 0, 10)
			return err
		},
	} {
		t.Run("ErrNotFound/"+name, func(t *testing.T) { wantCode(t, call(), apperr.NotFound) })
	}
}

// TestOutboxOfStatement: events appended by one statement, to two
// projects, get one delivery per webhook of their own project each, in
// the events' order (the outbox is written once per statement, from its
// new rows: migration 00069).
func TestOutboxOfStatement(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	ctx := t.Context()
	one, oneHooks := hookedProject(t, db, 2)
	other, otherHooks := hookedProject(t, db, 1)
	oneSensor, otherSensor := newSensor(t, db, one, nil), newSensor(t, db, other, nil)
	_, err := pool.Exec(ctx, `
INSERT INTO alarm_events (project_id, sensor_id, target_key, kind, level_name, value, reading_at)
SELECT CASE WHEN g % 2 = 0 THEN $1::bigint ELSE $3 END, CASE WHEN g % 2 = 0 THEN $2::bigint ELSE $4 END, 'x', 'triggered', 'Alarm', g, now()
FROM generate_series(1, 6) g`, one.ID, oneSensor.SensorID, other.ID, otherSensor.SensorID)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := pool.Query(ctx, `
SELECT d.webhook_id, e.project_id, e.value FROM webhook_deliveries d JOIN alarm_events e ON e.id = d.event_id ORDER BY d.id`)
	type delivery struct {
		hook, project int64
		value         float64
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (delivery, error) {
		var d delivery
		return d, row.Scan(&d.hook, &d.project, &d.value)
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []delivery
	for g := 1; g <= 6; g++ {
		if g%2 == 0 {
			for _, h := range oneHooks {
				want = append(want, delivery{h, one.ID, float64(g)})
			}
		} else {
			want = append(want, delivery{otherHooks[0], other.ID, float64(g)})
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("deliveries (webhook, project, event's value) in order = %v, want %v", got, want)
	}
}

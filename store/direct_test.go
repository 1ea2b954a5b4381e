package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestChecksSetChecks: SetChecks stores a sensor's checks and returns those
// it replaced; Checks reads them back, and none are left once set empty.
func TestChecksSetChecks(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
	rangeCheck := []store.Check{{TargetID: 1, Target: "u", Kind: "range", Min: ptr(0.0), Max: ptr(10.0), Flag: "bad"}}
	stuck := []store.Check{{TargetID: 2, Target: "i", Kind: "stuck", Count: 3, Flag: "stuck"}}
	steps := []struct {
		name       string
		set        []store.Check
		wantBefore []store.Check
	}{
		{"First", rangeCheck, nil},
		{"Replace", stuck, rangeCheck},
		{"Clear", nil, stuck},
		{"ClearAgain", nil, nil},
	}
	for _, s := range steps {
		var before []store.Check
		err := db.InTx(t.Context(), func(tx *store.Tx) error {
			var err error
			before, err = tx.SetChecks(t.Context(), key.SensorID, s.set)
			return err
		})
		if err != nil {
			t.Fatalf("%s: SetChecks: %v", s.name, err)
		}
		if !reflect.DeepEqual(before, s.wantBefore) {
			t.Errorf("%s: SetChecks returned %+v, want %+v", s.name, before, s.wantBefore)
		}
		got, err := db.Checks(t.Context(), key)
		if err != nil {
			t.Fatalf("%s: Checks: %v", s.name, err)
		}
		if !reflect.DeepEqual(got, s.set) {
			t.Errorf("%s: Checks = %+v, want %+v", s.name, got, s.set)
		}
	}
	unknown := key
	unknown.SensorID = unknownID
	_, err := db.Checks(t.Context(), unknown)
	wantCode(t, err, apperr.NotFound)
}

// TestAuthenticateExpiring: the life it returns is the token's time left,
// NeverExpires without an expiry, and an expired token is refused.
func TestAuthenticateExpiring(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	tests := []struct {
		name     string
		expires  *time.Time
		min, max time.Duration
		wantCode apperr.Code
	}{
		{"Never", nil, store.NeverExpires, store.NeverExpires, ""},
		{"InAnHour", ptr(time.Now().Add(time.Hour)), 50 * time.Minute, time.Hour + time.Minute, ""},
		{"Expired", ptr(time.Now().Add(-time.Second)), 0, 0, apperr.Unauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			org := newOrg(t, db)
			user := newMember(t, db, org, "ada", store.Editor)
			token, secret, err := db.CreateToken(t.Context(), user.ID, "ci", tt.expires)
			if err != nil {
				t.Fatal(err)
			}
			p, life, err := db.AuthenticateExpiring(t.Context(), secret, org.ID)
			if tt.wantCode != "" {
				wantCode(t, err, tt.wantCode)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := store.Principal{UserID: user.ID, TokenID: token.ID, TokenPrefix: token.Prefix, Role: store.Editor}
			if !reflect.DeepEqual(p, want) {
				t.Errorf("principal = %+v, want %+v", p, want)
			}
			if life < tt.min || life > tt.max {
				t.Errorf("life = %v, want in [%v, %v]", life, tt.min, tt.max)
			}
		})
	}
}

// TestListen: a NOTIFY sent once listening is called reaches notified,
// and cancelling the context ends Listen.
func TestListen(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	listening := make(chan struct{})
	notified := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() {
		done <- db.Listen(ctx, "store_test_channel", func() { close(listening) }, func() { notified <- struct{}{} })
	}()
	select {
	case <-listening:
	case err := <-done:
		t.Fatalf("Listen returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("listening not called")
	}
	if _, err := pool.Exec(t.Context(), `NOTIFY store_test_channel`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-notified:
	case <-time.After(10 * time.Second):
		t.Fatal("the notification did not reach notified")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Listen = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Listen did not end on cancel")
	}
}

// TestForgetRateWindows: it clears the stamps of what the sensor's rules
// keep, and only the sensor's.
func TestForgetRateWindows(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	const stamp = 42
	var rules []store.AlarmRule
	for range 2 {
		_, key := newBlueprintSensor(t, db)
		rule := createRule(t, db, key, store.AlarmRuleSpec{TargetKey: "u", Level: "Alarm", Direction: "above", Threshold: 1, Persistence: 1})
		if _, err := pool.Exec(t.Context(), `UPDATE alarm_rules SET rate_kept_stamp = $2 WHERE id = $1`, rule.ID, stamp); err != nil {
			t.Fatal(err)
		}
		rules = append(rules, rule)
	}
	if err := db.InTx(t.Context(), func(tx *store.Tx) error {
		return tx.ForgetRateWindows(t.Context(), rules[0].SensorID)
	}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{0, stamp} {
		var got *int64
		if err := pool.QueryRow(t.Context(), `SELECT rate_kept_stamp FROM alarm_rules WHERE id = $1`, rules[i].ID).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == nil && want != 0 || got != nil && *got != want {
			t.Errorf("rule %d's stamp is %v after forgetting sensor %d's windows, want %d (0: none)", rules[i].ID, got, rules[0].SensorID, want)
		}
	}
}

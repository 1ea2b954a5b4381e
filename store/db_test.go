package store_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// A value the database refuses is the client's Invalid with a message of
// ours; PostgreSQL's own (which names tables, constraints and encodings)
// stays the cause, for the log.
func TestDatabaseErrorsInOurWords(t *testing.T) {
	t.Parallel()
	db := store.New(storetest.NewPool(t))
	org, err := db.CreateOrg(t.Context(), "Acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"NULInText", func() error { _, err := db.CreateOrg(t.Context(), "a\x00b"); return err },
			"create organization: a text holds a character that cannot be stored, such as a NUL byte"},
		{"CheckViolation", func() error { _, err := db.CreateProject(t.Context(), org.ID, "", ""); return err },
			"create project: a value is outside what is allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			e, ok := errors.AsType[*apperr.Error](err)
			if !ok || e.Code != apperr.Invalid || e.Message != tc.want {
				t.Fatalf("error %v, want Invalid %q", err, tc.want)
			}
			if _, ok := errors.AsType[*pgconn.PgError](err); !ok || !strings.Contains(err.Error(), e.Message) {
				t.Errorf("the cause %v is not PostgreSQL's error", err)
			}
		})
	}
}

// TestDefaultLimits: every cap has a default, and the inputs of a sensor
// without a blueprint the one a blueprint has.
func TestDefaultLimits(t *testing.T) {
	l := store.DefaultLimits()
	v := reflect.ValueOf(l)
	for i := range v.NumField() {
		if v.Field(i).Int() <= 0 {
			t.Errorf("DefaultLimits().%s = %d, want a cap", v.Type().Field(i).Name, v.Field(i).Int())
		}
	}
	if l.SensorInputs != store.DefaultMaxSensorInputs {
		t.Errorf("DefaultLimits().SensorInputs = %d, want %d", l.SensorInputs, store.DefaultMaxSensorInputs)
	}
}

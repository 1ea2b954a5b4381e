package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
	"github.com/sensorreadings/readings/store/storetest"
)

// TestRetryAbortedTransactions makes PostgreSQL abort the transactions of
// writes as a deadlock's victim or a serialization failure, a given number
// of times (a trigger raises the error; a sequence, which no rollback
// undoes, counts the attempts). A write in InTx (a batch, a range delete)
// is run again, whole, up to its limit, and then answers Unavailable with
// nothing stored; a write in InTxOnce (a stream, which cannot be read
// twice) answers Unavailable at once.
func TestRetryAbortedTransactions(t *testing.T) {
	ctx := t.Context()
	pool := storetest.NewPool(t)
	db := store.New(pool)
	_, err := pool.Exec(ctx, `
CREATE SEQUENCE test_attempts;
CREATE FUNCTION test_abort() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('test_attempts') <= TG_ARGV[0]::int THEN
        RAISE EXCEPTION 'aborted by the test' USING ERRCODE = TG_ARGV[1];
    END IF;
    RETURN NULL;
END;
$$`)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 3, 4, 10, 0, 0, 0, time.UTC)
	batch := []store.Reading{
		{Time: at, InputIDs: []int64{1}, Values: []float64{1}},
		{Time: at.Add(time.Minute), InputIDs: []int64{1}, Values: []float64{2}},
	}
	writes := []struct {
		name     string
		write    func(store.SensorKey) error
		stored   []store.Reading // before it
		want     []store.Reading // after it
		attempts int
	}{
		{"InTx/WriteReadings", func(key store.SensorKey) error {
			_, err := insert(ctx, db, key, batch)
			return err
		}, nil, batch, store.DefaultTxAttempts},
		{"InTx/DeleteReadings", func(key store.SensorKey) error {
			_, err := deleteReadings(ctx, db, key, at, at.Add(time.Second))
			return err
		}, batch, batch[1:], store.DefaultTxAttempts},
		{"InTxOnce/CopyReadingStream", func(key store.SensorKey) error {
			_, err := insertStream(ctx, db, key, &sliceStream{readings: batch})
			return err
		}, nil, batch, 1},
	}
	for _, w := range writes {
		for _, code := range []string{"40P01", "40001"} {
			for _, aborts := range []int{w.attempts - 1, w.attempts} {
				t.Run(fmt.Sprintf("%s/%s/%dAborts", w.name, code, aborts), func(t *testing.T) {
					key := newSensor(t, db, newProject(t, db, newOrg(t, db)), nil)
					insertAll(t, db, key, w.stored)
					_, err := pool.Exec(ctx, fmt.Sprintf(`ALTER SEQUENCE test_attempts RESTART;
CREATE TRIGGER test_abort AFTER INSERT ON rollup_dirty FOR EACH STATEMENT EXECUTE FUNCTION test_abort('%d', '%s')`, aborts, code))
					if err != nil {
						t.Fatal(err)
					}
					err = w.write(key)
					if _, err := pool.Exec(ctx, `DROP TRIGGER test_abort ON rollup_dirty`); err != nil {
						t.Fatal(err)
					}
					var attempts int
					if err := pool.QueryRow(ctx, `SELECT last_value FROM test_attempts`).Scan(&attempts); err != nil {
						t.Fatal(err)
					}
					want, wantAttempts := w.want, aborts+1
					if aborts >= w.attempts {
						wantCode(t, err, apperr.Unavailable)
						want, wantAttempts = w.stored, w.attempts
					} else if err != nil {
						t.Fatalf("after %d aborts: %v", aborts, err)
					}
					if attempts != wantAttempts {
						t.Errorf("attempts = %d, want %d", attempts, wantAttempts)
					}
					if got := readAll(t, db, key); !equalReadings(got, want) {
						t.Errorf("readings = %v, want %v", got, want)
					}
				})
			}
		}
	}
}

// insertAll stores readings in the sensor, if there are any.
func insertAll(t *testing.T, db *store.DB, key store.SensorKey, readings []store.Reading) {
	t.Helper()
	if len(readings) > 0 {
		mustInsert(t, db, key, readings...)
	}
}

// readAll returns every reading of the sensor, in time order.
func readAll(t *testing.T, db *store.DB, key store.SensorKey) []store.Reading {
	t.Helper()
	var got []store.Reading
	q := store.ReadingQuery{From: store.MinTime, To: store.MaxTime}
	err := db.ListReadings(t.Context(), store.Sensor{ID: key.SensorID}, q, func(r *store.Reading) error {
		got = append(got, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func equalReadings(a, b []store.Reading) bool {
	return slices.EqualFunc(a, b, func(x, y store.Reading) bool {
		return x.Time.Equal(y.Time) && slices.Equal(x.InputIDs, y.InputIDs) && slices.Equal(x.Values, y.Values)
	})
}

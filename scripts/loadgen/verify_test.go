package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sensorreadings/readings/store/storetest"
)

// verify tells acknowledged batches that are all there from lost ones and
// partial ones, reading the real readings table.
func TestVerify(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDatabase(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	// store puts readings 0..stored-1 of batch tag on sensor, the way the
	// service stores what a load posts.
	store := func(sensor, tag int64, stored int) {
		t.Helper()
		for i := range stored {
			_, err := conn.Exec(ctx, `INSERT INTO readings (sensor_id, datetime, input_ids, vals) VALUES ($1, $2, '{1,2,3}', $3)`,
				sensor, readingTime(tag, i), []float64{float64(tag), float64(i), 1.5})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	store(1, 10, 3) // acknowledged, all there
	store(1, 11, 3) // not acknowledged, all there: only the answer was lost
	// 12: not acknowledged, absent
	store(2, 20, 3)

	dir := t.TempDir()
	clean := filepath.Join(dir, "clean")
	os.WriteFile(clean, []byte("sent 1 10 3\nsent 1 11 3\nsent 1 12 3\nack 1 10 3\nsent 2 20 3\nack 2 20 3\n"), 0o600)
	out, err := verify(t, dbURL, clean)
	if err != nil {
		t.Fatalf("verify of a clean run: %v\n%s", err, out)
	}
	if want := "batches acknowledged=2 lost=0 partial=0\n"; !strings.HasSuffix(out, want) {
		t.Errorf("verify of a clean run printed\n%s\nwant it to end with %q", out, want)
	}
	if want := "of the 2 unacknowledged, 1 fully present and 1 absent"; !strings.Contains(out, want) {
		t.Errorf("verify of a clean run printed\n%s\nwant it to say %q", out, want)
	}

	store(3, 30, 2) // acknowledged, one reading short: lost and partial
	store(3, 31, 1) // not acknowledged, one reading of three: partial
	broken := filepath.Join(dir, "broken")
	os.WriteFile(broken, []byte("sent 3 30 3\nack 3 30 3\nsent 3 31 3\nsent 3 32 4\nack 3 32 4\n"), 0o600)
	out, err = verify(t, dbURL, clean, broken)
	if err == nil {
		t.Fatalf("verify of a run that lost a batch passed:\n%s", out)
	}
	if want := "batches acknowledged=4 lost=2 partial=2\n"; !strings.HasSuffix(out, want) {
		t.Errorf("verify printed\n%s\nwant it to end with %q", out, want)
	}
}

func verify(t *testing.T, dbURL string, logs ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"verify", "-database-url", dbURL}, logs...)
	err := run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr)
	return stdout.String() + stderr.String(), err
}

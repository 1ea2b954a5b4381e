package server_test

import (
	"context"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/server"
	"github.com/sensorreadings/readings/store"
)

// testStandby is the test's own database playing a hot standby that is
// caught up, behind, or down, and counting the reads it serves.
type testStandby struct {
	*store.DB
	state atomic.Value // "caught up", "behind" or "down"
	reads atomic.Int64
}

func (s *testStandby) CaughtUp(ctx context.Context, lsn string) (bool, error) {
	switch s.state.Load() {
	case "behind":
		return false, nil
	case "down":
		return false, apperr.Errorf(apperr.Unavailable, "the database is unavailable; retry later")
	}
	return s.DB.CaughtUp(ctx, lsn)
}

func (s *testStandby) ListReadings(ctx context.Context, sensor store.Sensor, q store.ReadingQuery, fn func(*store.Reading) error) error {
	s.reads.Add(1)
	return s.DB.ListReadings(ctx, sensor, q, fn)
}

func (s *testStandby) ReadPage(ctx context.Context, r store.PageRead, head func(*store.Sensor, []store.Flag) error, fn func(*store.Reading) error) error {
	s.reads.Add(1)
	return s.DB.ReadPage(ctx, r, head, fn)
}

func (s *testStandby) LatestReadings(ctx context.Context, orgID, projectID, after int64, limit int, instances bool) ([]store.Latest, bool, error) {
	s.reads.Add(1)
	return s.DB.LatestReadings(ctx, orgID, projectID, after, limit, instances)
}

var lsnPattern = regexp.MustCompile(`^[0-9A-F]{1,8}/[0-9A-F]{1,8}$`)

func TestStandbyReads(t *testing.T) {
	t.Parallel()
	standby := &testStandby{}
	standby.state.Store("caught up")
	cfg := defaultConfig()
	// Long enough for the caught-up standby's own query on a loaded
	// machine: a wait of 50 ms sent it to the primary there.
	cfg.Standby, cfg.StandbyWait = standby, 2*time.Second
	e := newEnvWith(t, cfg, faults{deps: func(_ *server.Deps, db *store.DB) { standby.DB = db }})
	tn := e.newTenant("standby")
	c := e.client(tn.tokens[store.Editor])
	ctx := t.Context()

	res, err := c.PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, nil,
		[]client.ReadingInput{reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1})})
	if err != nil {
		t.Fatal(err)
	}
	lsn := res.HTTPResponse.Header.Get("X-Readings-LSN")
	if res.StatusCode() != 200 || !lsnPattern.MatchString(lsn) {
		t.Fatalf("POST readings: status %d, X-Readings-LSN %q; want 200 and an LSN", res.StatusCode(), lsn)
	}

	for _, tc := range []struct {
		state       string
		fromStandby int64
	}{
		{"caught up", 1},
		{"behind", 0}, // after StandbyWait, the primary
		{"down", 0},
	} {
		t.Run(tc.state, func(t *testing.T) {
			standby.state.Store(tc.state)
			before := standby.reads.Load()
			got, err := c.ListReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, &client.ListReadingsParams{XReadingsMinLSN: &lsn})
			if err != nil {
				t.Fatal(err)
			}
			if got.StatusCode() != 200 || got.JSON200 == nil || len(*got.JSON200) != 1 {
				t.Fatalf("a read after the write: status %d, body %s; want 200 and the reading", got.StatusCode(), got.Body)
			}
			if n := standby.reads.Load() - before; n != tc.fromStandby {
				t.Errorf("a standby %s served %d reads, want %d", tc.state, n, tc.fromStandby)
			}
		})
	}

	t.Run("LatestWithoutLSN", func(t *testing.T) {
		standby.state.Store("caught up")
		before := standby.reads.Load()
		got, err := c.LatestReadingsWithResponse(ctx, tn.orgID, tn.projectID, &client.LatestReadingsParams{})
		if err != nil || got.StatusCode() != 200 {
			t.Fatalf("latest: %v, status %d", err, got.StatusCode())
		}
		if n := standby.reads.Load() - before; n != 1 {
			t.Errorf("the standby served %d latest reads, want 1", n)
		}
	})

	t.Run("MalformedLSN", func(t *testing.T) {
		bad := "yesterday"
		got, err := c.ListReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, &client.ListReadingsParams{XReadingsMinLSN: &bad})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, got.StatusCode(), got.Body, 400, "invalid")
	})
}

// Without a standby, writes say nothing of the log.
func TestNoStandbyNoLSN(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("primary only")
	res, err := e.client(tn.tokens[store.Editor]).PostReadingsWithResponse(t.Context(), tn.orgID, tn.projectID, tn.sensorID, nil,
		[]client.ReadingInput{reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1})})
	if err != nil {
		t.Fatal(err)
	}
	if lsn := res.HTTPResponse.Header.Get("X-Readings-LSN"); res.StatusCode() != 200 || lsn != "" {
		t.Errorf("status %d, X-Readings-LSN %q; want 200 and none", res.StatusCode(), lsn)
	}
}

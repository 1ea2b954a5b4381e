package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profile starts a CPU profile of the service lasting d and returns a func
// that waits for it to end and writes it to -profile's directory as
// name.pprof. net/http/pprof profiles for a fixed time, so d should cover
// the phase; the time after the phase's work adds no samples, only a wait.
// Without -profile it does nothing.
func (e *env) profile(ctx context.Context, name string, d time.Duration) (wait func() error) {
	if e.cfg.profileDir == "" {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() { done <- e.saveCPUProfile(ctx, name, d) }()
	return func() error { return <-done }
}

// heapProfile saves the service's heap profile as name.pprof: the bytes
// allocated since start, so that two of them around a phase tell what it
// allocated (go tool pprof -sample_index=alloc_space -diff_base a b). gc=1
// collects first, since the profile counts only up to the last collection.
// Without -profile it does nothing.
func (e *env) heapProfile(ctx context.Context, name string) error {
	if e.cfg.profileDir == "" {
		return nil
	}
	return e.saveProfile(ctx, name, e.svc.pprof+"/debug/pprof/heap?gc=1")
}

func (e *env) saveCPUProfile(ctx context.Context, name string, d time.Duration) error {
	return e.saveProfile(ctx, name, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", e.svc.pprof, int(d.Seconds())))
}

func (e *env) saveProfile(ctx context.Context, name, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", name, resp.Status)
	}
	if err := os.MkdirAll(e.cfg.profileDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(e.cfg.profileDir, name+".pprof")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("profile %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	e.log.Info("wrote a profile of the service", "path", path, "view", "go tool pprof -top "+path)
	return nil
}

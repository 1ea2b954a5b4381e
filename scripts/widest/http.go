package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func (w *widest) request(ctx context.Context, method, path, accept, contentType string, body []byte, read func(io.Reader) (int64, error)) error {
	req, err := http.NewRequestWithContext(ctx, method, w.cfg.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", w.auth)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := w.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if wait, ok := retryAfter(res); ok && body == nil {
		// The service caps the exports open at once, per token and in
		// total (MAX_STREAMS_PER_TOKEN, MAX_STREAMS): a client beyond the
		// caps waits as asked and tries again, so the reads the limits
		// allow at once are the ones that run at once.
		w.retries.Add(1)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		return w.request(ctx, method, path, accept, contentType, body, read)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 500))
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	_, err = read(res.Body)
	return err
}

// retryAfter is how long a 429 asks to wait before trying again.
func retryAfter(res *http.Response) (time.Duration, bool) {
	if res.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	seconds, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || seconds < 0 {
		return 0, false
	}
	return time.Duration(seconds) * time.Second, true
}

// peak is the service's peak RSS (VmHWM) since it started or since the
// last resetPeak.
func (w *widest) peak() (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.cfg.pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/pid/status")
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

package server_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestConsole checks the web console's routes: public files, index.html
// for the console's own client-side routes, the right cache for each.
func TestConsole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(t *testing.T, method, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, string(body)
	}

	_, index := get(t, http.MethodGet, "/console/")
	script := regexp.MustCompile(`src="/console/(assets/[^"]+\.js)"`).FindStringSubmatch(index)
	if script == nil {
		t.Fatalf("/console/ names no script; body:\n%s", index)
	}

	t.Run("RootLeadsToTheConsole", func(t *testing.T) {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			res, _ := get(t, method, "/")
			if got, want := res.StatusCode, http.StatusFound; got != want {
				t.Fatalf("%s / = %d, want %d", method, got, want)
			}
			if got, want := res.Header.Get("Location"), "/console/"; got != want {
				t.Errorf("%s /: Location = %q, want %q", method, got, want)
			}
		}
	})

	t.Run("RedirectsToSlash", func(t *testing.T) {
		res, _ := get(t, http.MethodGet, "/console")
		if got, want := res.StatusCode, http.StatusMovedPermanently; got != want {
			t.Fatalf("GET /console = %d, want %d", got, want)
		}
		if got, want := res.Header.Get("Location"), "/console/"; got != want {
			t.Errorf("Location = %q, want %q", got, want)
		}
	})

	for _, path := range []string{"/console/", "/console/index.html", "/console/org/1/proj/2/sensors/3/readings", "/console/signin"} {
		t.Run("IndexFor"+path, func(t *testing.T) {
			res, body := get(t, http.MethodGet, path)
			if got, want := res.StatusCode, http.StatusOK; got != want {
				t.Fatalf("GET %s = %d, want %d (no token needed)", path, got, want)
			}
			if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/html") {
				t.Errorf("Content-Type = %q, want text/html", got)
			}
			if got, want := res.Header.Get("Cache-Control"), "no-cache"; got != want {
				t.Errorf("Cache-Control = %q, want %q: index.html names the current assets", got, want)
			}
			if got := res.Header.Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") {
				t.Errorf("Content-Security-Policy = %q, want script-src 'self'", got)
			}
			if body != index {
				t.Errorf("GET %s is not index.html", path)
			}
		})
	}

	t.Run("HashedAssetCachedForAYear", func(t *testing.T) {
		res, body := get(t, http.MethodGet, "/console/"+script[1])
		if got, want := res.StatusCode, http.StatusOK; got != want {
			t.Fatalf("GET %s = %d, want %d", script[1], got, want)
		}
		if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/javascript") {
			t.Errorf("Content-Type = %q, want text/javascript", got)
		}
		if got, want := res.Header.Get("Cache-Control"), "public, max-age=31536000, immutable"; got != want {
			t.Errorf("Cache-Control = %q, want %q", got, want)
		}
		if len(body) < 1000 {
			t.Errorf("the script has %d bytes", len(body))
		}
	})

	t.Run("MissingAssetIsNotFound", func(t *testing.T) {
		res, body := get(t, http.MethodGet, "/console/assets/gone-12345678.js")
		if got, want := res.StatusCode, http.StatusNotFound; got != want {
			t.Fatalf("GET a missing asset = %d, want %d; body %s", got, want, body)
		}
	})

	t.Run("Head", func(t *testing.T) {
		res, body := get(t, http.MethodHead, "/console/org/1")
		if got, want := res.StatusCode, http.StatusOK; got != want || body != "" {
			t.Fatalf("HEAD /console/org/1 = %d with %d bytes, want %d and none", got, len(body), want)
		}
	})

	t.Run("APIStillNeedsAToken", func(t *testing.T) {
		res, _ := get(t, http.MethodGet, "/api/v1/me")
		if got, want := res.StatusCode, http.StatusUnauthorized; got != want {
			t.Fatalf("GET /api/v1/me without a token = %d, want %d", got, want)
		}
	})
}

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/sensorreadings/readings/openapi"
)

// TestPublishedContract fetches the spec as a client without a token would,
// and the docs page with every file it loads.
func TestPublishedContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.client("")
	ctx := context.Background()

	t.Run("YAMLAsWritten", func(t *testing.T) {
		// Asked for as is: gzipped, the length would be the compressed one.
		res, err := c.GetOpenAPIYAMLWithResponse(ctx, func(_ context.Context, req *http.Request) error {
			req.Header.Set("Accept-Encoding", "identity")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := res.StatusCode(), 200; got != want {
			t.Fatalf("status %d, want %d: %s", got, want, res.Body)
		}
		if got, want := res.HTTPResponse.Header.Get("Content-Type"), "application/yaml"; got != want {
			t.Errorf("Content-Type %q, want %q", got, want)
		}
		if got, want := res.HTTPResponse.ContentLength, int64(len(openapi.YAML)); got != want {
			t.Errorf("Content-Length %d, want %d", got, want)
		}
		if !bytes.Equal(res.Body, openapi.YAML) {
			t.Error("the body is not openapi.yaml byte for byte")
		}
	})

	t.Run("JSONIsTheSameDocument", func(t *testing.T) {
		res, err := c.GetOpenAPIJSONWithResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := res.StatusCode(), 200; got != want {
			t.Fatalf("status %d, want %d: %s", got, want, res.Body)
		}
		if got, want := res.HTTPResponse.Header.Get("Content-Type"), "application/json"; got != want {
			t.Errorf("Content-Type %q, want %q", got, want)
		}
		loader := openapi3.NewLoader()
		served, err := loader.LoadFromData(res.Body)
		if err != nil {
			t.Fatalf("load the served JSON: %v", err)
		}
		if err := served.Validate(loader.Context); err != nil {
			t.Fatalf("validate the served JSON: %v", err)
		}
		written, err := openapi.Load()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(served)
		want, _ := json.Marshal(written)
		if !bytes.Equal(got, want) {
			t.Error("the served JSON is not the document openapi.yaml is")
		}
		// The paths keep the YAML's order, which the docs page shows.
		if i, j := bytes.Index(res.Body, []byte(`"/healthz"`)), bytes.Index(res.Body, []byte(`"/api/v1/me"`)); i < 0 || j < i {
			t.Errorf("/healthz at %d and /api/v1/me at %d, want the order of the YAML", i, j)
		}
	})

	t.Run("DocsPage", func(t *testing.T) {
		res, body := e.do("", "GET", "/docs", "", nil)
		if got, want := res.StatusCode, 200; got != want {
			t.Fatalf("GET /docs: status %d, want %d: %s", got, want, body)
		}
		if got, want := res.Header.Get("Content-Type"), "text/html; charset=utf-8"; got != want {
			t.Errorf("GET /docs: Content-Type %q, want %q", got, want)
		}
		policy := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "connect-src 'self'"} {
			if !strings.Contains(policy, want) {
				t.Errorf("Content-Security-Policy %q lacks %q", policy, want)
			}
		}
		page, err := url.Parse(e.url + "/docs")
		if err != nil {
			t.Fatal(err)
		}
		links := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllSubmatch(body, -1)
		if len(links) < 4 {
			t.Fatalf("the page links %d files, want the stylesheet, Swagger UI, docs.js and more:\n%s", len(links), body)
		}
		wantType := map[string]string{
			".js":   "text/javascript; charset=utf-8",
			".css":  "text/css; charset=utf-8",
			".png":  "image/png",
			".yaml": "application/yaml",
		}
		for _, link := range links {
			ref := string(link[1])
			u, err := page.Parse(ref)
			if err != nil {
				t.Fatal(err)
			}
			if u.Host != page.Host {
				t.Errorf("the page links %s, on another host", ref)
				continue
			}
			res, body := e.do("", "GET", u.Path, "", nil)
			if res.StatusCode != 200 {
				t.Errorf("GET %s (linked as %s): status %d", u.Path, ref, res.StatusCode)
				continue
			}
			ext := ref[strings.LastIndex(ref, "."):]
			if got, want := res.Header.Get("Content-Type"), wantType[ext]; got != want {
				t.Errorf("GET %s: Content-Type %q, want %q", u.Path, got, want)
			}
			if ref == "docs/docs.js" {
				// The script fetches the spec relative to the page, and no
				// URL of its own names a host.
				if !bytes.Contains(body, []byte(`fetch('api/v1/openapi.json'`)) {
					t.Error("docs.js does not fetch api/v1/openapi.json")
				}
				if m := regexp.MustCompile(`https?://`).Find(body); m != nil {
					t.Errorf("docs.js names a URL with a host (%s)", m)
				}
			}
		}
	})

	t.Run("DocsRevalidates", func(t *testing.T) {
		res, body := e.do("", "GET", "/docs/assets/swagger-ui-bundle.js", "", nil)
		etag := res.Header.Get("ETag")
		if res.StatusCode != 200 || etag == "" || len(body) < 100_000 {
			t.Fatalf("status %d, ETag %q, %d bytes; want 200, an ETag and Swagger UI", res.StatusCode, etag, len(body))
		}
		if got, want := res.Header.Get("Cache-Control"), "no-cache"; got != want {
			t.Errorf("Cache-Control %q, want %q", got, want)
		}
		req, err := http.NewRequest("GET", e.url+"/docs/assets/swagger-ui-bundle.js", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("If-None-Match", etag)
		again, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		again.Body.Close()
		if got, want := again.StatusCode, http.StatusNotModified; got != want {
			t.Errorf("with If-None-Match: status %d, want %d", got, want)
		}
	})

	t.Run("DocsTrailingSlash", func(t *testing.T) {
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := noRedirect.Get(e.url + "/docs/")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "../docs" {
			t.Errorf("GET /docs/: %d to %q, want 301 to ../docs", res.StatusCode, res.Header.Get("Location"))
		}
	})

	for _, path := range []string{"/docs/assets/nope.js", "/docs/index.html", "/docs/../server.go"} {
		t.Run("NotFound"+path, func(t *testing.T) {
			res, body := e.do("", "GET", path, "", nil)
			wantError(t, res.StatusCode, body, 404, "not_found")
		})
	}
}

package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/gen"
)

// docsFiles is the API reference page: index.html and docs.js, ours, and
// under assets/ Swagger UI's files as `make docs-assets` copies them from
// the npm package pinned in openapi/package.json.
//
//go:embed docs
var docsFiles embed.FS

// docsPolicy lets the page load and call nothing but this service. Swagger
// UI sets styles inline, and its stylesheet draws icons from data: URLs.
const docsPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// docFile is one file of the page, read once from the binary.
type docFile struct {
	body        []byte
	contentType string
	etag        string
}

// registerDocs serves the interactive API reference at /docs, rendered
// from /api/v1/openapi.json. The page and its files are no operations of
// the spec, so the middleware lets them through without a token.
func registerDocs(e gen.EchoRouter) error {
	files := map[string]docFile{}
	err := fs.WalkDir(docsFiles, "docs", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := docsFiles.ReadFile(name)
		if err != nil {
			return err
		}
		contentType := mime.TypeByExtension(path.Ext(name))
		if contentType == "" {
			contentType = "text/plain; charset=utf-8" // LICENSE, NOTICE
		}
		sum := sha256.Sum256(body)
		files[strings.TrimPrefix(name, "docs/")] = docFile{
			body:        body,
			contentType: contentType,
			etag:        `"` + hex.EncodeToString(sum[:16]) + `"`,
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the docs page: %w", err)
	}
	index, ok := files["index.html"]
	if !ok {
		return fmt.Errorf("read the docs page: no index.html")
	}
	delete(files, "index.html") // the page is /docs, and only that
	e.GET("/docs", index.serve)
	e.GET("/docs/*", func(c echo.Context) error {
		name := c.Param("*")
		if name == "" {
			// The page's links are relative to /docs; under /docs/ they
			// would miss.
			return c.Redirect(http.StatusMovedPermanently, "../docs")
		}
		f, ok := files[name]
		if !ok {
			return echo.ErrNotFound
		}
		return f.serve(c)
	})
	return nil
}

// serve sends the file. Browsers keep it but ask each time whether it
// changed (no-cache with an ETag), so a new binary's page shows at once and
// an unchanged one costs a 304, not the 1.7 MB of Swagger UI.
// http.ServeContent answers If-None-Match and ranges.
func (f docFile) serve(c echo.Context) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, f.contentType)
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("ETag", f.etag)
	h.Set(echo.HeaderContentSecurityPolicy, docsPolicy)
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(f.body))
	return nil
}

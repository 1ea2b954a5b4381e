package server

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/web"
)

// registerConsole serves the web console (web/dist) under /console/. These
// routes are not operations of the spec, so authenticate lets them through:
// the console is public files, and sends the user's token on its API calls.
// The service's root leads a browser there too: a JSON 404 told someone who
// opened the address make run printed nothing of where to go.
func registerConsole(e *echo.Echo) {
	c := console{files: web.Dist()}
	e.GET("/", c.root)
	e.HEAD("/", c.root)
	e.GET("/console", c.redirect)
	e.HEAD("/console", c.redirect)
	e.GET("/console/*", c.serve)
	e.HEAD("/console/*", c.serve)
}

type console struct {
	files fs.FS
}

// consoleCSP lets the console load only its own files and call only its own
// origin: the token it keeps in sessionStorage is worth stealing, and a
// policy that refuses inline and foreign scripts makes that much harder.
const consoleCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (console) redirect(c echo.Context) error {
	return c.Redirect(http.StatusMovedPermanently, "/console/")
}

// root is a temporary redirect: the root may one day answer something of
// its own, and a browser must not remember it.
func (console) root(c echo.Context) error {
	return c.Redirect(http.StatusFound, "/console/")
}

// serve answers a file of dist, or index.html for any other path, so that
// the console's own routes (/console/org/1/proj/2) survive a reload. Assets
// have content hashes in their names and never change, so they are cached
// for a year; index.html names the current ones, so it is never cached.
func (con console) serve(c echo.Context) error {
	c.Response().Header().Set("Content-Security-Policy", consoleCSP)
	name := strings.TrimPrefix(path.Clean("/"+c.Param("*")), "/")
	if name != "" && name != "index.html" {
		if f, err := con.files.Open(name); err == nil {
			defer f.Close()
			if st, err := f.Stat(); err == nil && !st.IsDir() {
				c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age=31536000, immutable")
				return serveFile(c, name, st.ModTime(), f)
			}
		}
		// A missing asset is a 404, not index.html: a browser would try to run
		// the page as a script and fail far from the cause.
		if strings.HasPrefix(name, "assets/") {
			return echo.NewHTTPError(http.StatusNotFound)
		}
	}
	f, err := con.files.Open("index.html")
	if err != nil {
		return err
	}
	defer f.Close()
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	return serveFile(c, "index.html", time.Time{}, f)
}

func serveFile(c echo.Context, name string, modTime time.Time, f fs.File) error {
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		return errors.New("console: embedded file is not seekable")
	}
	http.ServeContent(c.Response(), c.Request(), name, modTime, rs)
	return nil
}

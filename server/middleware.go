package server

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
)

const requestIDKey = "request_id"

// A client's own X-Request-ID is kept when it is short and plain, so that
// it can be logged as it is.
var clientRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// requestIDs gives every request an id, the client's X-Request-ID when it
// sent a usable one, and echoes it in the response.
func (s *Server) requestIDs(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !clientRequestID.MatchString(id) {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Set(requestIDKey, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// operationName is the spec's operationId of the request, the route of a
// path outside the spec (/metrics), or "unmatched": never the raw path, which
// a client could make endless.
func (s *Server) operationName(c echo.Context) string {
	if op := s.ops.lookup(c); op != nil {
		return op.id
	}
	if c.Response().Status == http.StatusNotFound || c.Path() == "" {
		return "unmatched"
	}
	return c.Path()
}

func requestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// statusClientGone is what the access log and the metrics record for a
// request whose client went away before it ended, as nginx does: nothing
// was sent for it, and it is no fault of the service's.
const statusClientGone = 499

// streamCut is the error a streaming response ends with when it fails after
// its status went out: too late for an error body, so accessLog logs it and
// then cuts the connection.
type streamCut struct{ err error }

func (e *streamCut) Error() string { return "stream cut part way: " + e.err.Error() }
func (e *streamCut) Unwrap() error { return e.err }

// accessLog writes one line per request, at a level that follows the
// status, with the cause of a failure on our side: errors are logged there,
// once. It hands errors to the error handler first, so the status it logs
// is the one sent. A request whose client went away is logged as 499, a
// warning: no answer can reach it, and it is not a fault of ours. A stream
// cut by a failure of ours is logged as 500, with its cause, then its
// connection is cut, so that the client sees a broken transfer rather than
// a file that looks complete. Headers are not logged: they carry tokens.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		// The request's own context, before any deadline is added: it ends
		// when the client goes away.
		client := c.Request().Context()
		err := next(c)
		cut, _ := errors.AsType[*streamCut](err)
		res := c.Response()
		status := res.Status
		switch {
		case err != nil && client.Err() != nil:
			status = statusClientGone
			c.Set(causeKey, fmt.Errorf("the client went away: %w", err))
		case cut != nil:
			status = http.StatusInternalServerError
			c.Set(causeKey, err)
		case err != nil:
			c.Error(err)
			status = res.Status
		}
		operation := s.operationName(c)
		elapsed := time.Since(start)
		s.metrics.requests.WithLabelValues(operation, strconv.Itoa(status)).Inc()
		s.metrics.duration.WithLabelValues(operation).Observe(elapsed.Seconds())
		if level := logLevel(status); s.log.Enabled(client, level) {
			s.logRequest(c, client, level, status, operation, elapsed)
		}
		if cut != nil {
			// A normal return would end the body as if it were complete.
			panic(http.ErrAbortHandler)
		}
		return nil
	}
}

// logRequest writes accessLog's line. accessLog calls it only when its
// level is logged: at a level turned off (LOG_LEVEL=warn, as the bench
// runs) every successful request built the line's eight attributes, the
// client's address among them, for slog to drop.
func (s *Server) logRequest(c echo.Context, client context.Context, level slog.Level, status int, operation string, elapsed time.Duration) {
	req, res := c.Request(), c.Response()
	attrs := []slog.Attr{
		slog.String("request_id", requestID(c)),
		slog.String("method", req.Method),
		slog.String("path", req.URL.Path),
		slog.String("operation", operation),
		slog.Int("status", status),
		slog.Int64("bytes", res.Size),
		slog.Duration("duration", elapsed),
		slog.String("remote", c.RealIP()),
	}
	if cause, ok := c.Get(causeKey).(error); ok {
		attrs = append(attrs, slog.String("error", cause.Error()))
	}
	s.log.LogAttrs(client, level, "request", attrs...)
}

// recoverPanics turns a panic into an internal error with its stack, which
// the error handler logs; the client sees only the request id.
func recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		return next(c)
	}
}

// secureHeaders stops browsers from sniffing a JSON error into HTML, and
// caches from keeping per-user answers.
func secureHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set(echo.HeaderCacheControl, "no-store")
		return next(c)
	}
}

// rejectSemicolons refuses query strings with a semicolon. Go's parser
// drops any key=value holding one, so "order=asc;x" would be served as if
// order were not there; a malformed query is a 400, not a shorter one.
func rejectSemicolons(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if strings.Contains(c.Request().URL.RawQuery, ";") {
			return apperr.Errorf(apperr.Invalid, "the query string has a semicolon; separate parameters with & and percent-encode values")
		}
		return next(c)
	}
}

// bodyLimit refuses a body over max bytes: at once when Content-Length says
// so, else when reading reaches max+1, before the rest is read. It keeps the
// body as it arrives for drainBody. A request without a body (net/http's
// NoBody: no Content-Length, or 0, and not chunked) has nothing to limit or
// drain, and keeps its request: the copy, the limited reader and the body
// kept were a share of the fixed cost of a small read.
func bodyLimit(max int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.Body == http.NoBody {
				return next(c)
			}
			if req.ContentLength > max {
				return bodyTooLarge(max)
			}
			body := &arrivingBody{ReadCloser: http.MaxBytesReader(c.Response(), req.Body, max)}
			c.Set(arrivingBodyKey, body)
			// A copy carries the limited body: net/http looks at the
			// original's to decide, once the answer starts, whether what is
			// left of the body is read and discarded (a stalled client would
			// hold the answer), left with the connection closed, or never
			// asked for with 100 Continue.
			limited := req.WithContext(req.Context())
			limited.Body = body
			c.SetRequest(limited)
			return next(c)
		}
	}
}

// arrivingBody is a request's body as it comes off the connection, before
// any decompression, bounded by the body limit.
type arrivingBody struct {
	io.ReadCloser
	read bool // whether anything has asked for its bytes yet
}

func (b *arrivingBody) Read(p []byte) (int, error) {
	b.read = true
	return b.ReadCloser.Read(p)
}

const arrivingBodyKey = "arriving_body"

// drainTimeout bounds how long a refused request's body is read on.
const drainTimeout = 10 * time.Second

// drainBody reads what is left of a refused request's body, and throws it
// away, before the refusal is written. A client that sends its whole body
// before it reads the answer (Python's http.client, Java's
// HttpURLConnection) would otherwise meet a connection closed under it
// while still sending, and never see the JSON error. The body limit bounds
// what is read, and drainTimeout how long: a client slower than that is cut
// off as before. A client waiting for 100 Continue before it sends is not
// asked for a body that nothing read.
func drainBody(c echo.Context) {
	body, ok := c.Get(arrivingBodyKey).(*arrivingBody)
	if !ok || (!body.read && strings.EqualFold(c.Request().Header.Get("Expect"), "100-continue")) {
		return
	}
	// The deadline stays: past it, net/http's own discard of what is left
	// gives up too, and the connection is closed after the answer.
	if err := http.NewResponseController(c.Response()).SetReadDeadline(time.Now().Add(drainTimeout)); err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, body)
}

// decompressRequest accepts bodies sent with Content-Encoding: gzip. The
// limit applies to the decompressed bytes, counted as they are inflated, so
// a small bomb cannot expand past it.
func decompressRequest(max int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			switch encoding := strings.ToLower(strings.TrimSpace(req.Header.Get(echo.HeaderContentEncoding))); encoding {
			case "", "identity":
				return next(c)
			case "gzip", "x-gzip":
				gz, err := gzip.NewReader(req.Body)
				if err != nil {
					return apperr.Errorf(apperr.Invalid, "the body is not valid gzip: %v", err)
				}
				defer gz.Close()
				req.Body = http.MaxBytesReader(c.Response(), gz, max)
				req.Header.Del(echo.HeaderContentEncoding)
				req.ContentLength = -1 // unknown until inflated
				return next(c)
			default:
				return echo.NewHTTPError(http.StatusUnsupportedMediaType,
					fmt.Sprintf("Content-Encoding %q is not supported; send gzip or nothing", encoding))
			}
		}
	}
}

type acceptKey struct{}

// keepAccept keeps the Accept header where handlers can see it: the strict
// handlers get the request's context, not the request.
func keepAccept(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if accept := c.Request().Header.Get(echo.HeaderAccept); accept != "" {
			c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), acceptKey{}, accept)))
		}
		return next(c)
	}
}

// prefersCSV tells whether the request's Accept header ranks text/csv above
// application/json; on a tie, JSON wins.
func prefersCSV(ctx context.Context) bool {
	accept, _ := ctx.Value(acceptKey{}).(string)
	return acceptQuality(accept, "text/csv") > acceptQuality(accept, "application/json")
}

// acceptQuality is the q of the most specific media range of accept that
// matches mediaType: type/subtype before type/* before */*.
func acceptQuality(accept, mediaType string) float64 {
	major, _, _ := strings.Cut(mediaType, "/")
	best, bestRank := 0.0, 0
	for _, part := range strings.Split(accept, ",") {
		r, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		rank := 0
		switch r {
		case mediaType:
			rank = 3
		case major + "/*":
			rank = 2
		case "*/*":
			rank = 1
		}
		if rank <= bestRank {
			continue
		}
		q := 1.0
		if v, err := strconv.ParseFloat(params["q"], 64); err == nil {
			q = v
		}
		best, bestRank = q, rank
	}
	return best
}

// databaseDeadline bounds how long an operation may wait for the database:
// past it the query is cancelled, its transaction rolled back and the
// client told 503 to retry. It runs as a strict middleware, after the body
// has been read, so a slow upload is not counted against the database. A
// streaming operation bounds each of its queries itself (dbDeadline): its
// response, which reads the database, runs after this middleware returns.
func (s *Server) databaseDeadline(next gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	// The strict handler names operations in Go: ExportReadings for the
	// spec's exportReadings.
	if s.cfg.DBTimeout <= 0 || streamingOperations[strings.ToLower(operationID[:1])+operationID[1:]] {
		return next
	}
	return func(c echo.Context, request any) (any, error) {
		if file, ok := request.(gen.PostReadingsRequestObject); ok && file.Body != nil {
			// A file streams in while the handler parses it, and the
			// handler bounds its queries itself (postFile).
			return next(c, request)
		}
		ctx, cancel := s.dbDeadline(c.Request().Context())
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c, request)
	}
}

// dbDeadline is ctx bounded by the database deadline, when there is one.
func (s *Server) dbDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.DBTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.cfg.DBTimeout)
}

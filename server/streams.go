package server

import (
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/apperr"
)

// streamingOperations answer with a response that streams for as long as
// the client takes to read it. They read the database in chunks under the
// database deadline each (see export.go), not under one deadline for the
// whole request, and they are capped by streamLimits.
var streamingOperations = map[string]bool{"exportReadings": true}

// streamRetryAfterSeconds is what a 429 for too many open streams asks the
// client to wait: streams end when their clients have read them, which no
// bucket can predict, so this is a polite pause rather than a promise.
const streamRetryAfterSeconds = 5

// streamLimits caps the streams open at once, exports and file uploads, in
// total and per token. A stream holds no database connection while its client reads, but
// it holds a goroutine, a chunk of memory and, while a chunk is read, a
// connection: the caps keep all of that bounded, and the total below the
// pool's size, so that ordinary requests always find a connection.
type streamLimits struct {
	total, perToken int // 0: no limit

	mu      sync.Mutex
	open    int
	byToken map[int64]int
}

func newStreamLimits(total, perToken int) *streamLimits {
	return &streamLimits{total: total, perToken: perToken, byToken: map[int64]int{}}
}

// acquire opens a stream for tokenID, or returns RateLimited, with
// Retry-After set in h, when the token or the service has as many open as
// it may. The caller calls release once the stream has ended.
func (l *streamLimits) acquire(h http.Header, tokenID int64) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.perToken > 0 && l.byToken[tokenID] >= l.perToken:
		h.Set(echo.HeaderRetryAfter, strconv.Itoa(streamRetryAfterSeconds))
		return nil, apperr.Errorf(apperr.RateLimited,
			"this token has %d exports open, its limit; retry after %d s or once one has finished", l.perToken, streamRetryAfterSeconds)
	case l.total > 0 && l.open >= l.total:
		h.Set(echo.HeaderRetryAfter, strconv.Itoa(streamRetryAfterSeconds))
		return nil, apperr.Errorf(apperr.RateLimited,
			"the service has %d exports open, its limit; retry after %d s", l.total, streamRetryAfterSeconds)
	}
	l.open++
	l.byToken[tokenID]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.open--
		if l.byToken[tokenID]--; l.byToken[tokenID] == 0 {
			delete(l.byToken, tokenID)
		}
	}, nil
}

// isFileUpload says whether a request is a logger's file: it is stored a
// line at a time as it arrives, in one transaction, so the client's pace
// holds a database connection and the sensor's lock for as long as it
// sends, up to the server's read timeout. It takes a stream slot, as an
// export does, so that slow uploads cannot take every connection.
func isFileUpload(operation string, r *http.Request) bool {
	if operation != "postReadings" {
		return false
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	return mediaType == "text/csv"
}

// openStreams is how many streams are open, for the metrics.
func (l *streamLimits) openStreams() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// limitStreams holds a stream slot for the whole of a streaming request,
// body included. It runs after authenticate, which names the token.
func (s *Server) limitStreams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		op := s.ops.lookup(c)
		if op == nil || !(streamingOperations[op.id] || isFileUpload(op.id, c.Request())) {
			return next(c)
		}
		release, err := s.streams.acquire(c.Response().Header(), principalOf(c.Request().Context()).TokenID)
		if err != nil {
			return err
		}
		defer release()
		return next(c)
	}
}

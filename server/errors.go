package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
)

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[apperr.Code]int{
	apperr.Invalid:      http.StatusBadRequest,
	apperr.Unauthorized: http.StatusUnauthorized,
	apperr.Forbidden:    http.StatusForbidden,
	apperr.NotFound:     http.StatusNotFound,
	apperr.Conflict:     http.StatusConflict,
	apperr.TooLarge:     http.StatusRequestEntityTooLarge,
	apperr.RateLimited:  http.StatusTooManyRequests,
	apperr.Unavailable:  http.StatusServiceUnavailable,
	apperr.Internal:     http.StatusInternalServerError,
}

// retryAfterSeconds is what a 503 asks clients to wait: long enough for a
// database restart or failover to finish, short enough not to lose data.
const retryAfterSeconds = 2

// handleError is Echo's HTTPErrorHandler: every error a request ends with,
// from a handler, a middleware or Echo itself, becomes the JSON error body
// here, with its status from statusOf. The cause of a 5xx is never shown to
// the client; it is kept for the request's one access-log line.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, body := s.errorBody(err, c)
	if status != http.StatusRequestEntityTooLarge {
		drainBody(c)
	}
	h := c.Response().Header()
	switch status {
	case http.StatusUnauthorized:
		challenge := `Bearer realm="readings"`
		if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
			challenge += `, error="invalid_token"`
		}
		h.Set(echo.HeaderWWWAuthenticate, challenge)
	case http.StatusServiceUnavailable:
		h.Set(echo.HeaderRetryAfter, strconv.Itoa(retryAfterSeconds))
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(status)
	} else {
		err = c.JSON(status, body)
	}
	if err != nil {
		s.log.Debug("write error response", "err", err)
	}
}

func (s *Server) errorBody(err error, c echo.Context) (int, gen.Error) {
	if appErr, ok := errors.AsType[*apperr.Error](err); ok && appErr.Code != apperr.Internal {
		body := gen.Error{Code: string(appErr.Code), Message: appErr.Message}
		if appErr.Details != nil {
			body.Details = &appErr.Details
		}
		if appErr.Code == apperr.Unavailable {
			c.Set(causeKey, err)
		}
		return statusOf[appErr.Code], body
	}
	if tooBig, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return s.errorBody(bodyTooLarge(tooBig.Limit), c)
	}
	if httpErr, ok := errors.AsType[*echo.HTTPError](err); ok && httpErr.Code < 500 {
		return httpErr.Code, gen.Error{Code: codeForStatus(httpErr.Code), Message: httpMessage(httpErr, c)}
	}
	id := requestID(c)
	c.Set(causeKey, err)
	return http.StatusInternalServerError, gen.Error{
		Code:    string(apperr.Internal),
		Message: fmt.Sprintf("internal error (request id %s); it has been logged", id),
	}
}

// causeKey holds, for the access log, why a request failed on our side.
const causeKey = "error_cause"

// codeForStatus names the errors Echo raises itself.
func codeForStatus(status int) string {
	switch status {
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusUnsupportedMediaType:
		return "unsupported_media_type"
	}
	for code, s := range statusOf {
		if s == status {
			return string(code)
		}
	}
	return string(apperr.Invalid)
}

// httpMessage rewrites Echo's terse messages ("Not Found") into sentences.
func httpMessage(e *echo.HTTPError, c echo.Context) string {
	switch e.Code {
	case http.StatusNotFound:
		return fmt.Sprintf("there is no %s %s; see /api/v1/openapi.yaml for the operations", c.Request().Method, c.Request().URL.Path)
	case http.StatusMethodNotAllowed:
		return fmt.Sprintf("%s is not allowed on %s", c.Request().Method, c.Request().URL.Path)
	case http.StatusUnsupportedMediaType:
		return fmt.Sprintf("send the body as application/json, not %q", c.Request().Header.Get(echo.HeaderContentType))
	}
	if msg, ok := e.Message.(string); ok {
		return msg
	}
	return http.StatusText(e.Code)
}

// logLevel is the access log's level for a status: 5xx are errors, 4xx
// warnings.
func logLevel(status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelError
	case status >= 400:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

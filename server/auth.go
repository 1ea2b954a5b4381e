package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// Authenticator finds the principal of a token.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string, orgID int64) (store.Principal, error)
}

// principalsKept is an Authenticator that keeps what it found, for the
// tokens used again (authcache): Kept answers from what it keeps, without
// the database; Forget forgets it all.
type principalsKept interface {
	Kept(secret string, orgID int64) (store.Principal, bool)
	Forget()
}

// forgetPrincipals has an Authenticator that keeps principals forget them
// once a write succeeds, before its answer is sent: a write may change what
// a token speaks for (a token revoked, a member's role changed or removed,
// an organization deleted), and the next request must see the change.
// Other replicas hear of it from PostgreSQL. Writes of readings change no
// principal and are many; they keep them.
func (s *Server) forgetPrincipals(next gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	kept, ok := s.Authenticator.(principalsKept)
	if !ok || writeOperations[operationID] {
		return next
	}
	return func(c echo.Context, request any) (any, error) {
		response, err := next(c, request)
		if method := c.Request().Method; err == nil && method != http.MethodGet && method != http.MethodHead {
			kept.Forget()
		}
		return response, err
	}
}

// TokenUse notes the tokens authenticated, for a worker to write when they
// were used (tokenuse.Recorder).
type TokenUse interface {
	Record(tokenID int64)
}

type principalKey struct{}

// principalOf returns who the request's token speaks for. Operations that
// are not public only run after authenticate has put it there.
func principalOf(ctx context.Context) store.Principal {
	p, _ := ctx.Value(principalKey{}).(store.Principal)
	return p
}

// authenticate enforces each operation's x-required-role and the token's
// scope over every resource the request names (scopeRefuses), the one
// place where permissions are decided: no token or a bad one is 401; a
// user who is not a member of the path's organization gets 404, as if it
// did not exist; a member whose role is too low gets 403 naming the role
// needed.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		op := s.ops.lookup(c)
		if op == nil || op.needs.public {
			return next(c)
		}
		secret, err := bearerToken(c.Request().Header.Get(echo.HeaderAuthorization))
		if err != nil {
			return err
		}
		if err := s.limits.allow(c.Response().Header(), secret); err != nil {
			return err
		}
		var orgID int64
		if op.needs.role != "" {
			orgID, err = strconv.ParseInt(c.Param("org_id"), 10, 64)
			if err != nil || orgID < 1 {
				return errOrgNotFound
			}
		}
		ctx := c.Request().Context()
		p, err := s.authenticateToken(ctx, secret, orgID)
		if err != nil {
			return err
		}
		s.TokenUse.Record(p.TokenID)
		if op.needs.role != "" && p.Role == "" {
			return errOrgNotFound
		}
		if err := scopeRefuses(c, op, p.Scope); err != nil {
			return err
		}
		if op.needs.role != "" && !p.Role.AtLeast(op.needs.role) {
			return apperr.Errorf(apperr.Forbidden, "%s needs the %s role in this organization; yours is %s", op.id, op.needs.role, p.Role)
		}
		c.SetRequest(c.Request().WithContext(store.WithActor(context.WithValue(ctx, principalKey{}, p), p.UserID)))
		return next(c)
	}
}

var errOrgNotFound = apperr.Errorf(apperr.NotFound, "organization not found")

// scopeRefuses applies a token's scope to an operation and to every
// resource its request names, in the path, the query or the body, as the
// spec declares them (x-resource; loadOperations refuses to serve an
// operation naming one it could not check). The organization is the
// store's to check (a token limited to another one has no role in it).
// Of the user operations a scoped token may only read, so that it cannot
// mint itself a broader token; every other operation's path must name the
// scope's project, and its sensors if it has some, or it is 403, as it
// would reach beyond the scope, unless the operation narrows its answer to
// the scope itself (x-scope: narrows, the status operations). Then each
// resource named is checked against
// the scope (named.beyond): another project or sensor is 404, as for a
// non-member.
func scopeRefuses(c echo.Context, op *operation, scope store.TokenScope) error {
	switch {
	case !scope.Scoped():
		return nil
	case scope.Device && !op.needs.device:
		return apperr.Errorf(apperr.Forbidden, "%s: a device token may only post readings", op.id)
	case op.needs.role == "" && c.Request().Method != http.MethodGet && c.Request().Method != http.MethodHead:
		return apperr.Errorf(apperr.Forbidden, "%s needs a token without a scope", op.id)
	case op.needs.role != "" && !op.needs.narrows && scope.ProjectID != 0 && !op.names.pathNames(project):
		return apperr.Errorf(apperr.Forbidden, "%s: this token is limited to project %d", op.id, scope.ProjectID)
	case op.needs.role != "" && !op.needs.narrows && len(scope.SensorIDs) > 0 && !op.names.pathNames(sensor):
		return apperr.Errorf(apperr.Forbidden, "%s: this token is limited to sensors %v", op.id, scope.SensorIDs)
	}
	named, err := op.names.named(c)
	if err != nil {
		return err
	}
	for _, n := range named {
		if err := n.beyond(scope, op.id); err != nil {
			return err
		}
	}
	return nil
}

// authenticateToken asks the store who secret is, within the database
// deadline: the request's own deadline starts only once its body is read.
// A token the Authenticator keeps is answered without one: the deadline's
// timer, set and stopped for nothing, was a share of the fixed cost of a
// small read such as a project's latest values.
func (s *Server) authenticateToken(ctx context.Context, secret string, orgID int64) (store.Principal, error) {
	if kept, ok := s.Authenticator.(principalsKept); ok {
		if p, ok := kept.Kept(secret, orgID); ok {
			return p, nil
		}
	}
	ctx, cancel := s.dbDeadline(ctx)
	defer cancel()
	return s.Authenticator.Authenticate(ctx, secret, orgID)
}

// bearerToken returns the token of an Authorization header. Tokens are
// checked for shape before any database work, so garbage costs nothing.
func bearerToken(header string) (string, error) {
	if header == "" {
		return "", apperr.Errorf(apperr.Unauthorized, "a bearer token is required: send Authorization: Bearer <token>")
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", apperr.Errorf(apperr.Unauthorized, "the Authorization header must be Bearer <token>")
	}
	token = strings.TrimSpace(token)
	if !store.WellFormedToken(token) {
		return "", apperr.Errorf(apperr.Unauthorized, "the token is not valid")
	}
	return token, nil
}

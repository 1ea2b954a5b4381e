package server

import (
	"context"
	"time"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// Profile is what the caller's own account and tokens are read and
// changed through.
type Profile interface {
	Me(ctx context.Context, userID int64) (store.User, []store.Membership, error)
	ListTokens(ctx context.Context, userID, before int64, limit int) ([]store.Token, bool, error)
	CreateScopedToken(ctx context.Context, userID int64, name string, expiresAt *time.Time, scope store.TokenScope) (store.Token, string, error)
	RevokeToken(ctx context.Context, userID, tokenID int64) error
}

// GetMe returns the caller and their memberships.
func (s *Server) GetMe(ctx context.Context, _ gen.GetMeRequestObject) (gen.GetMeResponseObject, error) {
	p := principalOf(ctx)
	user, memberships, err := s.Profile.Me(ctx, p.UserID)
	if err != nil {
		return nil, err
	}
	out := gen.GetMe200JSONResponse{User: toUser(user), TokenId: p.TokenID, Memberships: make([]gen.Membership, len(memberships))}
	for i, m := range memberships {
		out.Memberships[i] = toMembership(m)
	}
	return out, nil
}

// ListTokens returns a page of the caller's tokens without their secrets.
func (s *Server) ListTokens(ctx context.Context, req gen.ListTokensRequestObject) (gen.ListTokensResponseObject, error) {
	before, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	tokens, more, err := s.Profile.ListTokens(ctx, principalOf(ctx).UserID, before, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListTokens200JSONResponse{Items: mapSlice(tokens, toToken)}
	if len(tokens) > 0 {
		out.NextCursor = nextCursor(more, tokens[len(tokens)-1].ID)
	}
	return out, nil
}

// CreateToken issues a token to the caller and shows its secret, once.
func (s *Server) CreateToken(ctx context.Context, req gen.CreateTokenRequestObject) (gen.CreateTokenResponseObject, error) {
	var expiresAt *time.Time
	if days := req.Body.ExpiresInDays; days != nil {
		t := time.Now().Add(time.Duration(*days) * 24 * time.Hour)
		expiresAt = &t
	}
	token, secret, err := s.Profile.CreateScopedToken(ctx, principalOf(ctx).UserID, req.Body.Name, expiresAt, fromTokenScope(req.Body.Scope))
	if err != nil {
		return nil, err
	}
	t := toToken(token)
	return gen.CreateToken201JSONResponse{
		Id: t.Id, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, Scope: t.Scope, Token: secret,
	}, nil
}

// RevokeToken revokes one of the caller's tokens.
func (s *Server) RevokeToken(ctx context.Context, req gen.RevokeTokenRequestObject) (gen.RevokeTokenResponseObject, error) {
	if err := s.Profile.RevokeToken(ctx, principalOf(ctx).UserID, req.TokenId); err != nil {
		return nil, err
	}
	return gen.RevokeToken204Response{}, nil
}

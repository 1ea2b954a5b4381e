package server

import (
	"context"
	"net/url"
	"time"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// Invitations are an organization's invitations and their acceptance.
type Invitations interface {
	ListInvitations(ctx context.Context, orgID, before int64, limit int) ([]store.Invitation, bool, error)
	CreateInvitation(ctx context.Context, orgID, invitedBy int64, email string, role store.Role, expiresAt time.Time) (store.Invitation, string, error)
	RevokeInvitation(ctx context.Context, orgID, id int64) error
	AcceptInvitation(ctx context.Context, code, name string) (store.Accepted, error)
	AcceptInvitationAs(ctx context.Context, code string, userID int64) (store.Membership, error)
}

const defaultInvitationDays = 7

// ListInvitations returns a page of the organization's invitations.
func (s *Server) ListInvitations(ctx context.Context, req gen.ListInvitationsRequestObject) (gen.ListInvitationsResponseObject, error) {
	before, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	invs, more, err := s.Invitations.ListInvitations(ctx, req.OrgId, before, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListInvitations200JSONResponse{Items: mapSlice(invs, toInvitation)}
	if len(invs) > 0 {
		out.NextCursor = nextCursor(more, invs[len(invs)-1].ID)
	}
	return out, nil
}

// CreateInvitation invites an email address and shows the code, once.
func (s *Server) CreateInvitation(ctx context.Context, req gen.CreateInvitationRequestObject) (gen.CreateInvitationResponseObject, error) {
	days := defaultInvitationDays
	if req.Body.ExpiresInDays != nil {
		days = *req.Body.ExpiresInDays
	}
	expiresAt := time.Now().Add(time.Duration(days) * 24 * time.Hour)
	inv, code, err := s.Invitations.CreateInvitation(ctx, req.OrgId, principalOf(ctx).UserID, string(req.Body.Email), store.Role(req.Body.Role), expiresAt)
	if err != nil {
		return nil, err
	}
	i := toInvitation(inv)
	return gen.CreateInvitation201JSONResponse{
		Id: i.Id, Email: i.Email, Role: i.Role, State: gen.InvitationCreatedState(i.State), CreatedAt: i.CreatedAt, ExpiresAt: i.ExpiresAt,
		Code: code, AcceptPath: "/console/accept?" + url.Values{"code": {code}}.Encode(),
	}, nil
}

// RevokeInvitation revokes an invitation.
func (s *Server) RevokeInvitation(ctx context.Context, req gen.RevokeInvitationRequestObject) (gen.RevokeInvitationResponseObject, error) {
	if err := s.Invitations.RevokeInvitation(ctx, req.OrgId, req.InvitationId); err != nil {
		return nil, err
	}
	return gen.RevokeInvitation204Response{}, nil
}

// AcceptInvitation exchanges a code for a new account: its user,
// membership and first token.
func (s *Server) AcceptInvitation(ctx context.Context, req gen.AcceptInvitationRequestObject) (gen.AcceptInvitationResponseObject, error) {
	a, err := s.Invitations.AcceptInvitation(ctx, req.Body.Code, deref(req.Body.Name))
	if err != nil {
		return nil, err
	}
	t := toToken(a.Token)
	return gen.AcceptInvitation201JSONResponse{
		User:       toUser(a.User),
		Membership: toMembership(a.Membership),
		Token:      gen.TokenCreated{Id: t.Id, Name: t.Name, Prefix: t.Prefix, CreatedAt: t.CreatedAt, Token: a.Secret},
	}, nil
}

// AcceptMyInvitation accepts an invitation addressed to the calling user.
func (s *Server) AcceptMyInvitation(ctx context.Context, req gen.AcceptMyInvitationRequestObject) (gen.AcceptMyInvitationResponseObject, error) {
	m, err := s.Invitations.AcceptInvitationAs(ctx, req.Body.Code, principalOf(ctx).UserID)
	if err != nil {
		return nil, err
	}
	return gen.AcceptMyInvitation200JSONResponse(toMembership(m)), nil
}

func toInvitation(i store.Invitation) gen.Invitation {
	return gen.Invitation{
		Id:         i.ID,
		Email:      i.Email,
		Role:       gen.Role(i.Role),
		State:      gen.InvitationState(i.State),
		CreatedAt:  toDatetime(i.CreatedAt),
		ExpiresAt:  toDatetime(i.ExpiresAt),
		AcceptedAt: optionalDatetime(i.AcceptedAt),
		RevokedAt:  optionalDatetime(i.RevokedAt),
	}
}

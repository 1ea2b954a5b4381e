package server

import (
	"context"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// Members are an organization's members.
type Members interface {
	ListMembers(ctx context.Context, orgID, after int64, limit int) ([]store.Member, bool, error)
	AddMember(ctx context.Context, orgID int64, email, name string, role store.Role) (store.Member, error)
	UpdateMember(ctx context.Context, orgID, userID int64, role store.Role) (store.Member, error)
	RemoveMember(ctx context.Context, orgID, userID int64) error
}

// ListMembers returns a page of the organization's members.
func (s *Server) ListMembers(ctx context.Context, req gen.ListMembersRequestObject) (gen.ListMembersResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	members, more, err := s.Members.ListMembers(ctx, req.OrgId, after, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListMembers200JSONResponse{Items: mapSlice(members, toMember)}
	if len(members) > 0 {
		out.NextCursor = nextCursor(more, members[len(members)-1].UserID)
	}
	return out, nil
}

// AddMember adds a user, new or known, to the organization.
func (s *Server) AddMember(ctx context.Context, req gen.AddMemberRequestObject) (gen.AddMemberResponseObject, error) {
	m, err := s.Members.AddMember(ctx, req.OrgId, string(req.Body.Email), deref(req.Body.Name), store.Role(req.Body.Role))
	if err != nil {
		return nil, err
	}
	return gen.AddMember201JSONResponse(toMember(m)), nil
}

// UpdateMember changes a member's role.
func (s *Server) UpdateMember(ctx context.Context, req gen.UpdateMemberRequestObject) (gen.UpdateMemberResponseObject, error) {
	m, err := s.Members.UpdateMember(ctx, req.OrgId, req.UserId, store.Role(req.Body.Role))
	if err != nil {
		return nil, err
	}
	return gen.UpdateMember200JSONResponse(toMember(m)), nil
}

// RemoveMember removes a member from the organization.
func (s *Server) RemoveMember(ctx context.Context, req gen.RemoveMemberRequestObject) (gen.RemoveMemberResponseObject, error) {
	if err := s.Members.RemoveMember(ctx, req.OrgId, req.UserId); err != nil {
		return nil, err
	}
	return gen.RemoveMember204Response{}, nil
}

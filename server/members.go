package server

import (
	"context"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// ListMembers returns the organization's members.
func (s *Server) ListMembers(ctx context.Context, req gen.ListMembersRequestObject) (gen.ListMembersResponseObject, error) {
	members, err := s.store.ListMembers(ctx, req.OrgId)
	if err != nil {
		return nil, err
	}
	return gen.ListMembers200JSONResponse(mapSlice(members, toMember)), nil
}

// AddMember adds a user, new or known, to the organization.
func (s *Server) AddMember(ctx context.Context, req gen.AddMemberRequestObject) (gen.AddMemberResponseObject, error) {
	m, err := s.store.AddMember(ctx, req.OrgId, string(req.Body.Email), deref(req.Body.Name), store.Role(req.Body.Role))
	if err != nil {
		return nil, err
	}
	return gen.AddMember201JSONResponse(toMember(m)), nil
}

// UpdateMember changes a member's role.
func (s *Server) UpdateMember(ctx context.Context, req gen.UpdateMemberRequestObject) (gen.UpdateMemberResponseObject, error) {
	m, err := s.store.UpdateMember(ctx, req.OrgId, req.UserId, store.Role(req.Body.Role))
	if err != nil {
		return nil, err
	}
	return gen.UpdateMember200JSONResponse(toMember(m)), nil
}

// RemoveMember removes a member from the organization.
func (s *Server) RemoveMember(ctx context.Context, req gen.RemoveMemberRequestObject) (gen.RemoveMemberResponseObject, error) {
	if err := s.store.RemoveMember(ctx, req.OrgId, req.UserId); err != nil {
		return nil, err
	}
	return gen.RemoveMember204Response{}, nil
}

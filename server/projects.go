package server

import (
	"context"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// Projects are an organization's projects.
type Projects interface {
	ListProjects(ctx context.Context, orgID, after int64, limit int) ([]store.Project, bool, error)
	CreateProject(ctx context.Context, orgID int64, name, description string) (store.Project, error)
	GetProject(ctx context.Context, orgID, projectID int64) (store.Project, error)
	UpdateProject(ctx context.Context, orgID, projectID int64, patch store.ProjectPatch) (store.Project, error)
	DeleteProject(ctx context.Context, orgID, projectID int64) error
}

// ListProjects returns a page of the organization's projects.
func (s *Server) ListProjects(ctx context.Context, req gen.ListProjectsRequestObject) (gen.ListProjectsResponseObject, error) {
	after, limit, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	projects, more, err := s.Projects.ListProjects(ctx, req.OrgId, after, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListProjects200JSONResponse{Items: mapSlice(projects, toProject)}
	if len(projects) > 0 {
		out.NextCursor = nextCursor(more, projects[len(projects)-1].ID)
	}
	return out, nil
}

// CreateProject creates a project.
func (s *Server) CreateProject(ctx context.Context, req gen.CreateProjectRequestObject) (gen.CreateProjectResponseObject, error) {
	p, err := s.Projects.CreateProject(ctx, req.OrgId, req.Body.Name, deref(req.Body.Description))
	if err != nil {
		return nil, err
	}
	return gen.CreateProject201JSONResponse(toProject(p)), nil
}

// FetchProject returns a project, under the collection's path.
func (s *Server) FetchProject(ctx context.Context, req gen.FetchProjectRequestObject) (gen.FetchProjectResponseObject, error) {
	p, err := s.Projects.GetProject(ctx, req.OrgId, req.ProjectId)
	if err != nil {
		return nil, err
	}
	return gen.FetchProject200JSONResponse(toProject(p)), nil
}

// GetProject returns a project.
func (s *Server) GetProject(ctx context.Context, req gen.GetProjectRequestObject) (gen.GetProjectResponseObject, error) {
	p, err := s.Projects.GetProject(ctx, req.OrgId, req.ProjId)
	if err != nil {
		return nil, err
	}
	return gen.GetProject200JSONResponse(toProject(p)), nil
}

// UpdateProject changes the fields the body names.
func (s *Server) UpdateProject(ctx context.Context, req gen.UpdateProjectRequestObject) (gen.UpdateProjectResponseObject, error) {
	patch := store.ProjectPatch{Name: req.Body.Name, Description: req.Body.Description}
	if req.Body.State != nil {
		state := store.ProjectState(*req.Body.State)
		patch.State = &state
	}
	p, err := s.Projects.UpdateProject(ctx, req.OrgId, req.ProjId, patch)
	if err != nil {
		return nil, err
	}
	return gen.UpdateProject200JSONResponse(toProject(p)), nil
}

// DeleteProject deletes a project with its sensors and readings.
func (s *Server) DeleteProject(ctx context.Context, req gen.DeleteProjectRequestObject) (gen.DeleteProjectResponseObject, error) {
	if err := s.Projects.DeleteProject(ctx, req.OrgId, req.ProjId); err != nil {
		return nil, err
	}
	return gen.DeleteProject204Response{}, nil
}

// ProjectAction archives or restores a project.
func (s *Server) ProjectAction(ctx context.Context, req gen.ProjectActionRequestObject) (gen.ProjectActionResponseObject, error) {
	state := store.Active
	if req.Body.Action == gen.Archive {
		state = store.Archived
	}
	p, err := s.Projects.UpdateProject(ctx, req.OrgId, req.ProjId, store.ProjectPatch{State: &state})
	if err != nil {
		return nil, err
	}
	return gen.ProjectAction200JSONResponse(toProject(p)), nil
}

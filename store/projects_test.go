package store_test

import (
	"strings"
	"testing"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestProjects tests the methods of projects.go.
func TestProjects(t *testing.T) {
	runOnOneDB(t, map[string]func(*testing.T, *store.DB){
		"ListProjects":  testListProjects,
		"CreateProject": testCreateProject,
		"GetProject":    testGetProject,
		"UpdateProject": testUpdateProject,
		"DeleteProject": testDeleteProject,
	})
}

func testListProjects(t *testing.T, db *store.DB) {
	org, other := newOrg(t, db), newOrg(t, db)
	var want []int64
	for range 3 {
		want = append(want, newProject(t, db, org).ID)
		newProject(t, db, other)
	}
	checkPages(t, want, func(after int64, limit int) ([]int64, bool, error) {
		projects, more, err := db.ListProjects(t.Context(), org.ID, after, limit)
		return ids(projects, func(p store.Project) int64 { return p.ID }), more, err
	})
}

func testCreateProject(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		project, err := db.CreateProject(t.Context(), org.ID, "plant", "the north plant")
		if err != nil {
			t.Fatal(err)
		}
		want := store.Project{
			ID: project.ID, OrgID: org.ID, Name: "plant", Description: "the north plant", State: store.Active,
			CreatedAt: project.CreatedAt, UpdatedAt: project.UpdatedAt,
		}
		if project != want || project.ID == 0 || project.CreatedAt.IsZero() {
			t.Fatalf("CreateProject = %+v, want %+v", project, want)
		}
	})
	for name, tt := range map[string]struct {
		orgID             func(store.Org) int64
		name, description string
	}{
		"ErrInvalid/EmptyName":       {orgOf, "", ""},
		"ErrInvalid/LongDescription": {orgOf, "plant", strings.Repeat("a", 2001)},
		"ErrInvalid/UnknownOrg":      {unknownOrg, "plant", ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := db.CreateProject(t.Context(), tt.orgID(newOrg(t, db)), tt.name, tt.description)
			wantCode(t, err, apperr.Invalid)
		})
	}
}

func testGetProject(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		project := newProject(t, db, newOrg(t, db))
		got, err := db.GetProject(t.Context(), project.OrgID, project.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(project.CreatedAt) {
			t.Fatalf("CreatedAt=%v, want %v", got.CreatedAt, project.CreatedAt)
		}
		got.CreatedAt, got.UpdatedAt = project.CreatedAt, project.UpdatedAt
		if got != project {
			t.Fatalf("GetProject = %+v, want %+v", got, project)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, err := db.GetProject(t.Context(), newOrg(t, db).ID, unknownID)
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		project := newProject(t, db, newOrg(t, db))
		_, err := db.GetProject(t.Context(), newOrg(t, db).ID, project.ID)
		wantCode(t, err, apperr.NotFound)
	})
}

func testUpdateProject(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		project, err := db.CreateProject(t.Context(), newOrg(t, db).ID, "plant", "kept")
		if err != nil {
			t.Fatal(err)
		}
		updated, err := db.UpdateProject(t.Context(), project.OrgID, project.ID, store.ProjectPatch{Name: ptr("renamed")})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := updated.Name, "renamed"; got != want {
			t.Fatalf("Name=%q, want %q", got, want)
		}
		if got, want := updated.Description, "kept"; got != want {
			t.Fatalf("Description=%q, want %q", got, want)
		}
		if updated.UpdatedAt.Before(project.UpdatedAt) {
			t.Fatalf("UpdatedAt=%v, before the creation's %v", updated.UpdatedAt, project.UpdatedAt)
		}
		got, err := db.GetProject(t.Context(), project.OrgID, project.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "renamed" {
			t.Fatalf("GetProject after UpdateProject: Name=%q, want %q", got.Name, "renamed")
		}
	})
	for name, patch := range map[string]store.ProjectPatch{
		"ErrInvalid/EmptyName": {Name: ptr("")},
		"ErrInvalid/State":     {State: ptr(store.ProjectState("deleted"))},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			project := newProject(t, db, newOrg(t, db))
			_, err := db.UpdateProject(t.Context(), project.OrgID, project.ID, patch)
			wantCode(t, err, apperr.Invalid)
		})
	}
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, err := db.UpdateProject(t.Context(), newOrg(t, db).ID, unknownID, store.ProjectPatch{Name: ptr("renamed")})
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		project := newProject(t, db, newOrg(t, db))
		_, err := db.UpdateProject(t.Context(), newOrg(t, db).ID, project.ID, store.ProjectPatch{Name: ptr("renamed")})
		wantCode(t, err, apperr.NotFound)
		got, err := db.GetProject(t.Context(), project.OrgID, project.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != project.Name {
			t.Fatalf("another organization renamed the project to %q", got.Name)
		}
	})
}

func testDeleteProject(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		project := newProject(t, db, newOrg(t, db))
		sensor := newSensor(t, db, project, nil)
		if err := db.DeleteProject(t.Context(), project.OrgID, project.ID); err != nil {
			t.Fatal(err)
		}
		_, err := db.GetProject(t.Context(), project.OrgID, project.ID)
		wantCode(t, err, apperr.NotFound)
		_, err = db.GetSensor(t.Context(), sensor)
		wantCode(t, err, apperr.NotFound)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		wantCode(t, db.DeleteProject(t.Context(), newOrg(t, db).ID, unknownID), apperr.NotFound)
	})
	t.Run("ErrNotFound/AnotherOrg", func(t *testing.T) {
		t.Parallel()
		project := newProject(t, db, newOrg(t, db))
		wantCode(t, db.DeleteProject(t.Context(), newOrg(t, db).ID, project.ID), apperr.NotFound)
		if _, err := db.GetProject(t.Context(), project.OrgID, project.ID); err != nil {
			t.Fatalf("GetProject after another organization's DeleteProject: %v", err)
		}
	})
}

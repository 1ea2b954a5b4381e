package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

func TestProjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	owner := e.owner(tn)

	created, err := owner.CreateProjectWithResponse(ctx, tn.orgID, client.ProjectCreate{Name: "Dam ☃ '; DROP TABLE projects; --", Description: ptr("North")})
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create: %v %s", err, created.Body)
	}
	p := *created.JSON201
	if p.State != client.Active || p.OrgId != tn.orgID || p.Name != "Dam ☃ '; DROP TABLE projects; --" {
		t.Errorf("created %+v, want an active project of org %d with the name as sent", p, tn.orgID)
	}

	t.Run("BothPathsFetchIt", func(t *testing.T) {
		a, _ := owner.FetchProjectWithResponse(ctx, tn.orgID, p.Id)
		b, _ := owner.GetProjectWithResponse(ctx, tn.orgID, p.Id)
		if a.StatusCode() != 200 || b.StatusCode() != 200 || *a.JSON200 != *b.JSON200 || a.JSON200.Name != p.Name {
			t.Errorf("fetch %d %s, get %d %s: want the same project", a.StatusCode(), a.Body, b.StatusCode(), b.Body)
		}
	})
	t.Run("PartialUpdate", func(t *testing.T) {
		res, err := owner.UpdateProjectWithResponse(ctx, tn.orgID, p.Id, client.ProjectUpdate{Description: ptr("North dam")})
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("update: %v %s", err, res.Body)
		}
		if got := res.JSON200; got.Name != p.Name || got.Description != "North dam" || !at(t, got.UpdatedAt).After(at(t, p.UpdatedAt)) {
			t.Errorf("updated %+v: want the name kept, the description changed, updated_at later", got)
		}
	})
	t.Run("EmptyUpdate", func(t *testing.T) {
		res, body := e.do(tn.tokens[store.Owner], "PUT", fmt.Sprintf("/api/v1/org/%d/proj/%d", tn.orgID, p.Id), "application/json", strings.NewReader(`{}`))
		wantError(t, res.StatusCode, body, 400, "invalid")
	})
	t.Run("BadState", func(t *testing.T) {
		res, body := e.do(tn.tokens[store.Owner], "PUT", fmt.Sprintf("/api/v1/org/%d/proj/%d", tn.orgID, p.Id), "application/json", strings.NewReader(`{"state":"deleted"}`))
		wantError(t, res.StatusCode, body, 400, "invalid")
	})
	t.Run("ArchiveTwice", func(t *testing.T) {
		for range 2 {
			res, _ := owner.ProjectActionWithResponse(ctx, tn.orgID, p.Id, client.ProjectAction{Action: client.Archive})
			if res.StatusCode() != 200 || res.JSON200.State != client.Archived {
				t.Fatalf("archive: %d %s", res.StatusCode(), res.Body)
			}
		}
	})
	t.Run("UnknownAction", func(t *testing.T) {
		res, body := e.do(tn.tokens[store.Owner], "POST", fmt.Sprintf("/api/v1/org/%d/proj/%d", tn.orgID, p.Id), "application/json", strings.NewReader(`{"action":"explode"}`))
		wantError(t, res.StatusCode, body, 400, "invalid")
	})
	t.Run("NameRequired", func(t *testing.T) {
		for _, body := range []string{`{}`, `{"name":""}`, `{"name":"` + strings.Repeat("x", 201) + `"}`, `{"name":"x","extra":1}`, `{"name":7}`} {
			res, got := e.do(tn.tokens[store.Owner], "POST", fmt.Sprintf("/api/v1/org/%d/projects", tn.orgID), "application/json", strings.NewReader(body))
			wantError(t, res.StatusCode, got, 400, "invalid")
		}
	})
	t.Run("NULInName", func(t *testing.T) {
		res, body := e.do(tn.tokens[store.Owner], "POST", fmt.Sprintf("/api/v1/org/%d/projects", tn.orgID), "application/json", strings.NewReader(`{"name":"a\u0000b"}`))
		wantError(t, res.StatusCode, body, 400, "invalid")
	})
}

func TestProjectsPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme") // has one project already
	ctx := context.Background()
	owner := e.owner(tn)
	for i := range 6 {
		if res, _ := owner.CreateProjectWithResponse(ctx, tn.orgID, client.ProjectCreate{Name: fmt.Sprint("p", i)}); res.StatusCode() != 201 {
			t.Fatalf("create: %s", res.Body)
		}
	}
	var ids []int64
	params := client.ListProjectsParams{Limit: ptr(3)}
	for pages := 0; ; pages++ {
		res, err := owner.ListProjectsWithResponse(ctx, tn.orgID, &params)
		if err != nil || res.StatusCode() != 200 {
			t.Fatalf("list: %v %s", err, res.Body)
		}
		for _, p := range res.JSON200.Items {
			ids = append(ids, p.Id)
		}
		if res.JSON200.NextCursor == nil {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		params.Cursor = res.JSON200.NextCursor
	}
	if len(ids) != 7 {
		t.Fatalf("paged through %d projects, want 7: %v", len(ids), ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ids %v are not in ascending order", ids)
		}
	}
	res, body := e.do(tn.tokens[store.Viewer], "GET", fmt.Sprintf("/api/v1/org/%d/projects?cursor=abc", tn.orgID), "", nil)
	wantError(t, res.StatusCode, body, 400, "invalid")
}

func TestSensors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	admin := e.client(tn.tokens[store.Admin])

	created, err := admin.CreateSensorWithResponse(ctx, tn.orgID, tn.projectID, client.SensorCreate{Name: "PZ-02"})
	if err != nil || created.StatusCode() != 201 || created.JSON201.ProjectId != tn.projectID {
		t.Fatalf("create: %v %s", err, created.Body)
	}
	s := *created.JSON201

	list, _ := admin.ListSensorsWithResponse(ctx, tn.orgID, tn.projectID, nil)
	if list.StatusCode() != 200 || len(list.JSON200.Items) != 3 {
		t.Fatalf("list: %d %s, want the fixture's two sensors and the new one", list.StatusCode(), list.Body)
	}
	updated, _ := admin.UpdateSensorWithResponse(ctx, tn.orgID, tn.projectID, s.Id, client.SensorUpdate{Name: ptr("PZ-02b")})
	if updated.StatusCode() != 200 || updated.JSON200.Name != "PZ-02b" || updated.JSON200.Description != s.Description {
		t.Fatalf("update: %d %s", updated.StatusCode(), updated.Body)
	}
	got, _ := admin.GetSensorWithResponse(ctx, tn.orgID, tn.projectID, s.Id)
	if got.StatusCode() != 200 || got.JSON200.Name != "PZ-02b" {
		t.Fatalf("get: %d %s", got.StatusCode(), got.Body)
	}

	t.Run("OtherProjectsPath", func(t *testing.T) {
		other := e.newTenant("Globex")
		res, _ := admin.GetSensorWithResponse(ctx, tn.orgID, other.projectID, other.sensorID)
		wantError(t, res.StatusCode(), res.Body, 404, "not_found")
		res2, _ := admin.ListSensorsWithResponse(ctx, tn.orgID, other.projectID, nil)
		wantError(t, res2.StatusCode(), res2.Body, 404, "not_found")
		res3, _ := admin.CreateSensorWithResponse(ctx, tn.orgID, other.projectID, client.SensorCreate{Name: "intruder"})
		wantError(t, res3.StatusCode(), res3.Body, 404, "not_found")
	})
}

// Deleting a sensor or a project deletes its readings, which have no
// foreign key, and nobody else's.
func TestDeleteCascadesToReadings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme := e.newTenant("Acme")
	globex := e.newTenant("Globex")
	ctx := context.Background()
	for _, tn := range []tenant{acme, globex} {
		post(t, e.client(tn.tokens[store.Editor]), tn, reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 1}))
	}
	second, err := e.db.CreateSensor(ctx, acme.orgID, acme.projectID, "second", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	acme2 := acme
	acme2.sensorID = second.ID
	post(t, e.client(acme.tokens[store.Editor]), acme2, reading(t, "2024-05-01T12:00:00Z", client.Values{"1": 2}))

	del, _ := e.client(acme.tokens[store.Admin]).DeleteSensorWithResponse(ctx, acme.orgID, acme.projectID, acme.sensorID)
	if del.StatusCode() != 204 {
		t.Fatalf("delete sensor: %d %s", del.StatusCode(), del.Body)
	}
	if n := countReadings(t, e); n != 2 {
		t.Errorf("%d readings after deleting a sensor, want 2", n)
	}
	again, _ := e.client(acme.tokens[store.Admin]).DeleteSensorWithResponse(ctx, acme.orgID, acme.projectID, acme.sensorID)
	wantError(t, again.StatusCode(), again.Body, 404, "not_found")

	delProject, _ := e.owner(acme).DeleteProjectWithResponse(ctx, acme.orgID, acme.projectID)
	if delProject.StatusCode() != 204 {
		t.Fatalf("delete project: %d %s", delProject.StatusCode(), delProject.Body)
	}
	if n := countReadings(t, e); n != 1 {
		t.Errorf("%d readings after deleting the project, want Globex's 1", n)
	}
	gone, _ := e.owner(acme).GetProjectWithResponse(ctx, acme.orgID, acme.projectID)
	wantError(t, gone.StatusCode(), gone.Body, 404, "not_found")
}

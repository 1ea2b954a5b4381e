package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// allStatuses reads every page of a status operation, limit sensors a page,
// and fails the test unless each answers 200.
func allStatuses(t *testing.T, page func(cursor *string) (int, []byte, *client.SensorStatusPage)) map[int64]client.SensorStatus {
	t.Helper()
	out := map[int64]client.SensorStatus{}
	var last int64
	for cursor := (*string)(nil); ; {
		status, body, p := page(cursor)
		if status != http.StatusOK {
			t.Fatalf("status: %d %s", status, body)
		}
		for _, st := range p.Items {
			if st.SensorId <= last {
				t.Fatalf("status: sensor %d after %d, want id order", st.SensorId, last)
			}
			last = st.SensorId
			out[st.SensorId] = st
		}
		if p.NextCursor == nil {
			return out
		}
		cursor = p.NextCursor
	}
}

func projectStatus(t *testing.T, c *client.ClientWithResponses, orgID, projectID int64, p client.ProjectStatusParams) map[int64]client.SensorStatus {
	t.Helper()
	return allStatuses(t, func(cursor *string) (int, []byte, *client.SensorStatusPage) {
		p.Cursor = cursor
		res, err := c.ProjectStatusWithResponse(context.Background(), orgID, projectID, &p)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode(), res.Body, res.JSON200
	})
}

func orgStatus(t *testing.T, c *client.ClientWithResponses, orgID int64, limit int) map[int64]client.SensorStatus {
	t.Helper()
	return allStatuses(t, func(cursor *string) (int, []byte, *client.SensorStatusPage) {
		res, err := c.OrgStatusWithResponse(context.Background(), orgID, &client.OrgStatusParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode(), res.Body, res.JSON200
	})
}

func sensorIDs(m map[int64]client.SensorStatus) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// projectWithSensor adds a project named name to the organization, with a
// sensor named "In <name>".
func projectWithSensor(t *testing.T, e *env, orgID int64, name string) (store.Project, store.Sensor) {
	t.Helper()
	project, err := e.db.CreateProject(t.Context(), orgID, name, "")
	if err != nil {
		t.Fatal(err)
	}
	sensor, err := e.db.CreateSensor(t.Context(), orgID, project.ID, "In "+name, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return project, sensor
}

func TestProjectStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Status")
	ctx := context.Background()
	admin := e.client(tn.tokens[store.Admin])
	viewer := e.client(tn.tokens[store.Viewer])

	quiet, err := e.db.CreateSensor(ctx, tn.orgID, tn.projectID, "Quiet", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The piezometer: digits 9000 and pressure -900 (G 0.1, R0 0) raise
	// an Alert on digits and an Alarm on pressure.
	sensor, err := e.db.GetSensor(ctx, store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID})
	if err != nil {
		t.Fatal(err)
	}
	freq, pressure := fmt.Sprint(sensor.Instance.Inputs[0].ID), fmt.Sprint(sensor.Instance.Outputs[1].ID)
	for _, rule := range []client.AlarmRuleInput{
		{Target: "digits", Level: "Alert", Direction: "above", Threshold: 5000},
		{Target: "pressure", Level: "Alarm", Direction: "below", Threshold: -500},
	} {
		res, err := admin.CreateAlarmRuleWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, rule)
		if err != nil || res.StatusCode() != http.StatusCreated {
			t.Fatalf("create rule: %v %s", err, res.Body)
		}
	}
	piezo := tn
	piezo.sensorID = tn.instanceID
	now := time.Now().UTC().Truncate(time.Second)
	post(t, admin, piezo, client.ReadingInput{Datetime: now.Add(-time.Minute), Inputs: client.Values{freq: 3000}})
	alarms, err := viewer.ListAlarmsWithResponse(ctx, tn.orgID, tn.projectID, nil)
	if err != nil || len(alarms.JSON200.Items) != 2 {
		t.Fatalf("alarms: %v %s, want 2", err, alarms.Body)
	}
	ack, err := admin.AcknowledgeAlarmWithResponse(ctx, tn.orgID, tn.projectID, alarms.JSON200.Items[1].Id, client.AlarmAcknowledge{})
	if err != nil || ack.StatusCode() != http.StatusOK {
		t.Fatalf("acknowledge: %v %s", err, ack.Body)
	}
	// The plain sensor read 2 hours ago, and may be silent for 1: overdue
	// now, before any background check raised its alarm.
	post(t, admin, tn, client.ReadingInput{Datetime: now.Add(-2 * time.Hour), Inputs: client.Values{"1": 7}})
	overdue, err := admin.SetOverdueRuleWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, client.OverdueRuleInput{Level: "Maintenance", AfterSeconds: 3600})
	if err != nil || overdue.StatusCode() != http.StatusOK {
		t.Fatalf("overdue rule: %v %s", err, overdue.Body)
	}

	got := projectStatus(t, viewer, tn.orgID, tn.projectID, client.ProjectStatusParams{Limit: ptr(1)})
	if ids, want := sensorIDs(got), []int64{tn.sensorID, tn.instanceID, quiet.ID}; !slices.Equal(ids, want) {
		t.Fatalf("sensors = %v, want %v", ids, want)
	}
	p := got[tn.instanceID]
	if p.Level == nil || p.Level.Name != "Alarm" || p.Level.Rank != 4 || p.Level.Colour != "#eb5757" {
		t.Errorf("piezometer's level = %+v, want Alarm (rank 4, #eb5757), the worse of its two", p.Level)
	}
	if p.Alarms != 2 || p.Unacknowledged != 1 || p.Overdue || p.OverdueAfter != nil {
		t.Errorf("piezometer: alarms %d, unacknowledged %d, overdue %v after %v; want 2, 1, false, none", p.Alarms, p.Unacknowledged, p.Overdue, p.OverdueAfter)
	}
	if p.SensorName != "Status piezometer" || p.ProjectId != tn.projectID {
		t.Errorf("piezometer named %q in project %d, want %q in %d", p.SensorName, p.ProjectId, "Status piezometer", tn.projectID)
	}
	if r := p.Reading; r == nil || r.Inputs[freq] != 3000 || r.Outputs == nil || (*r.Outputs)[pressure] != -900 || at(t, r.Datetime) != now.Add(-time.Minute) {
		t.Errorf("piezometer's reading = %+v, want freq 3000 and pressure -900 a minute ago", r)
	}
	plain := got[tn.sensorID]
	if plain.Level != nil || plain.Alarms != 0 || !plain.Overdue || plain.OverdueAfter == nil || *plain.OverdueAfter != 3600 {
		t.Errorf("plain sensor = %+v, want at rest, overdue after 3600 s", plain)
	}
	if r := plain.Reading; r == nil || r.Inputs["1"] != 7 || r.Outputs != nil {
		t.Errorf("plain sensor's reading = %+v, want input 1 = 7 and no outputs", r)
	}
	if q := got[quiet.ID]; q.Level != nil || q.Alarms != 0 || q.Overdue || q.Reading != nil || q.SensorName != "Quiet" {
		t.Errorf("sensor without readings or rules = %+v, want nothing but its name", q)
	}

	t.Run("Reported", func(t *testing.T) {
		post(t, admin, tn, client.ReadingInput{Datetime: now, Inputs: client.Values{"1": 8}})
		if st := projectStatus(t, viewer, tn.orgID, tn.projectID, client.ProjectStatusParams{})[tn.sensorID]; st.Overdue {
			t.Errorf("a sensor that just reported is overdue: %+v", st)
		}
	})
	t.Run("SensorFilter", func(t *testing.T) {
		got := projectStatus(t, viewer, tn.orgID, tn.projectID, client.ProjectStatusParams{SensorId: &[]int64{quiet.ID, tn.instanceID}})
		if ids, want := sensorIDs(got), []int64{tn.instanceID, quiet.ID}; !slices.Equal(ids, want) {
			t.Errorf("sensor_id filter: sensors %v, want %v", ids, want)
		}
		// An id that is no sensor of the project is refused, as its path would be.
		res, err := viewer.ProjectStatusWithResponse(ctx, tn.orgID, tn.projectID, &client.ProjectStatusParams{SensorId: &[]int64{quiet.ID, quiet.ID + 1000}})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, http.StatusNotFound, "not_found")
	})
	t.Run("NotFound", func(t *testing.T) {
		other := e.newTenant("Elsewhere")
		res, err := viewer.ProjectStatusWithResponse(ctx, tn.orgID, other.projectID, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, http.StatusNotFound, "not_found")
	})
}

func TestOrgStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Org status")
	ctx := context.Background()
	owner := e.owner(tn)

	second, inSecond := projectWithSensor(t, e, tn.orgID, "Second")
	archived, _ := projectWithSensor(t, e, tn.orgID, "Archived")
	if res, err := owner.ProjectActionWithResponse(ctx, tn.orgID, archived.ID, client.ProjectAction{Action: "archive"}); err != nil || res.StatusCode() != http.StatusOK {
		t.Fatalf("archive: %v %s", err, res.Body)
	}
	other := e.newTenant("Other org")

	got := orgStatus(t, e.client(tn.tokens[store.Viewer]), tn.orgID, 2)
	if ids, want := sensorIDs(got), []int64{tn.sensorID, tn.instanceID, inSecond.ID}; !slices.Equal(ids, want) {
		t.Errorf("org status: sensors %v, want %v: every active project's, none of the archived one's or another organization's", ids, want)
	}
	if st := got[inSecond.ID]; st.ProjectId != second.ID || st.SensorName != "In Second" {
		t.Errorf("org status of a sensor of the second project = %+v", st)
	}
	if got := orgStatus(t, e.owner(other), other.orgID, 100); len(got) != 2 {
		t.Errorf("the other organization's status: %d sensors, want its own 2", len(got))
	}
}

// TestStatusScopes: the status operations narrow their answer to a scoped
// token's reach rather than refuse it (x-scope: narrows), and no scope
// reaches past itself.
func TestStatusScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Scoped")
	ctx := context.Background()
	second, inSecond := projectWithSensor(t, e, tn.orgID, "Second")
	scoped := func(scope store.TokenScope) *client.ClientWithResponses {
		scope.OrgID = tn.orgID
		_, secret, err := e.db.CreateScopedToken(ctx, tn.userIDs[store.Owner], "scoped", nil, scope)
		if err != nil {
			t.Fatal(err)
		}
		return e.client(secret)
	}
	project := scoped(store.TokenScope{ProjectID: tn.projectID, Role: store.Viewer})
	sensors := scoped(store.TokenScope{ProjectID: tn.projectID, SensorIDs: []int64{tn.instanceID}, Role: store.Viewer})
	device := scoped(store.TokenScope{ProjectID: tn.projectID, SensorIDs: []int64{tn.instanceID}, Device: true})
	org := scoped(store.TokenScope{Role: store.Viewer})

	for _, c := range []struct {
		name   string
		client *client.ClientWithResponses
		org    []int64
		proj   []int64
	}{
		{"Organization", org, []int64{tn.sensorID, tn.instanceID, inSecond.ID}, []int64{tn.sensorID, tn.instanceID}},
		{"Project", project, []int64{tn.sensorID, tn.instanceID}, []int64{tn.sensorID, tn.instanceID}},
		{"Sensors", sensors, []int64{tn.instanceID}, []int64{tn.instanceID}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sensorIDs(orgStatus(t, c.client, tn.orgID, 100)); !slices.Equal(got, c.org) {
				t.Errorf("org status: sensors %v, want %v", got, c.org)
			}
			if got := sensorIDs(projectStatus(t, c.client, tn.orgID, tn.projectID, client.ProjectStatusParams{})); !slices.Equal(got, c.proj) {
				t.Errorf("project status: sensors %v, want %v", got, c.proj)
			}
			// Asking for sensors within the scope answers those.
			asked := c.proj
			if got := sensorIDs(projectStatus(t, c.client, tn.orgID, tn.projectID, client.ProjectStatusParams{SensorId: &asked})); !slices.Equal(got, asked) {
				t.Errorf("project status of %v: sensors %v, want them", asked, got)
			}
		})
	}
	// Asking for a sensor beyond the scope, or for none of the project, is
	// refused as that sensor's path would be.
	for name, c := range map[string]struct {
		client *client.ClientWithResponses
		asked  int64
	}{
		"SensorsAskingOutside":   {sensors, tn.sensorID},
		"ProjectAskingElsewhere": {project, inSecond.ID},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := c.client.ProjectStatusWithResponse(ctx, tn.orgID, tn.projectID, &client.ProjectStatusParams{SensorId: &[]int64{c.asked}})
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, res.StatusCode(), res.Body, http.StatusNotFound, "not_found")
		})
	}
	t.Run("OtherProject", func(t *testing.T) {
		res, err := project.ProjectStatusWithResponse(ctx, tn.orgID, second.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, http.StatusNotFound, "not_found")
	})
	t.Run("Device", func(t *testing.T) {
		res, err := device.ProjectStatusWithResponse(ctx, tn.orgID, tn.projectID, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res.StatusCode(), res.Body, http.StatusForbidden, "forbidden")
		org, err := device.OrgStatusWithResponse(ctx, tn.orgID, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, org.StatusCode(), org.Body, http.StatusForbidden, "forbidden")
	})
}

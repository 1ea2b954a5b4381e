package server_test

import (
	"testing"
	"time"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// TestScopedTokens walks a device token's life through the generated
// client: made by an editor for one sensor, it posts there and nowhere
// else, reads nothing, and loses its right to post when its user is
// demoted. The matrix (TestAuthMatrix) covers every operation.
func TestScopedTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := t.Context()
	editor := e.client(tn.tokens[store.Editor])

	scope := client.TokenScope{OrgId: tn.orgID, ProjectId: ptr(tn.projectID), SensorIds: &[]int64{tn.sensorID}, Device: ptr(true)}
	created, err := editor.CreateTokenWithResponse(ctx, client.TokenCreate{Name: "logger 7", Scope: &scope})
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create device token: %v %s", err, created.Body)
	}
	if got := created.JSON201.Scope; got == nil || got.Role == nil || *got.Role != client.Editor {
		t.Errorf("scope %+v, want the editor ceiling shown", got)
	}
	device := e.client(created.JSON201.Token)
	reading := []client.ReadingInput{{Datetime: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), Inputs: map[string]float64{"1": 1}}}

	res, err := device.PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, nil, reading)
	if err != nil || res.StatusCode() != 200 {
		t.Fatalf("post to the sensor in scope: %v %d %s, want 200", err, res.StatusCode(), res.Body)
	}
	res, err = device.PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, nil, reading)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res.StatusCode(), res.Body, 404, "not_found")
	list, err := device.ListReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, list.StatusCode(), list.Body, 403, "forbidden")

	// Its user demoted to viewer, the token may not post any more.
	if err := e.db.SetMembership(ctx, tn.orgID, tn.userIDs[store.Editor], store.Viewer); err != nil {
		t.Fatal(err)
	}
	res, err = device.PostReadingsWithResponse(ctx, tn.orgID, tn.projectID, tn.sensorID, nil, reading)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res.StatusCode(), res.Body, 403, "forbidden")

	// A ceiling above the user's role (viewer now) is refused; so is a
	// scope of an organization they are not in.
	for _, tt := range []struct {
		name   string
		scope  client.TokenScope
		status int
		code   string
	}{
		{"AboveTheUser", client.TokenScope{OrgId: tn.orgID, Role: ptr(client.Admin)}, 403, "forbidden"},
		{"AnotherOrg", client.TokenScope{OrgId: e.newTenant("Other").orgID}, 404, "not_found"},
		{"SensorsWithoutProject", client.TokenScope{OrgId: tn.orgID, SensorIds: &[]int64{tn.sensorID}}, 400, "invalid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := editor.CreateTokenWithResponse(ctx, client.TokenCreate{Name: "ci", Scope: &tt.scope})
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, res.StatusCode(), res.Body, tt.status, tt.code)
		})
	}
}

package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/store"
)

// matrixFixture is what one call of the matrix runs against, made afresh
// for each call so that a DELETE cannot spoil the next call.
type matrixFixture struct {
	tenant   tenant // the organization named in the path
	other    tenant // another organization, whose data must never show
	target   int64  // a member the member operations act on
	revoked  string // a revoked token of the tenant's owner
	expired  string // an expired token of the tenant's owner
	tokenIDs map[string]int64
	scoped   map[scopeKind]string // the owner's scoped tokens
	// A pending invitation to the tenant, whose code the matrix sends to
	// acceptInvitation in place of the spec's example.
	invitationID   int64
	invitationCode string
	// An unused alarm level, a rule on the tenant's piezometer and the
	// alarm its reading raised, for the alarm operations.
	levelID, ruleID, alarmID int64
	webhookID                int64 // with a delivery of the alarm's event
	// A second piezometer of the tenant's project, the source of the link
	// the matrix sets.
	source int64
	// names is what the matrix's requests name in their query or body
	// (namingRequest): the tenant's own resources unless a row says
	// otherwise.
	names namedIDs
}

func (e *env) newMatrixFixture(t *testing.T, n int) matrixFixture {
	ctx := context.Background()
	f := matrixFixture{
		tenant:   e.newTenant(fmt.Sprintf("ALPHA-%d", n)),
		other:    e.newTenant(fmt.Sprintf("BRAVO-%d", n)),
		tokenIDs: map[string]int64{},
		scoped:   map[scopeKind]string{},
	}
	owner := f.tenant.userIDs[store.Owner]
	revoked, secret, err := e.db.CreateToken(ctx, owner, "revoked", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.RevokeToken(ctx, owner, revoked.ID); err != nil {
		t.Fatal(err)
	}
	f.revoked = secret
	past := time.Now().Add(-time.Minute)
	if _, f.expired, err = e.db.CreateToken(ctx, owner, "expired", &past); err != nil {
		t.Fatal(err)
	}
	target, err := e.db.EnsureUser(ctx, fmt.Sprintf("target-%d@example.com", n), "Target")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.SetMembership(ctx, f.tenant.orgID, target.ID, store.Viewer); err != nil {
		t.Fatal(err)
	}
	f.target = target.ID
	inv, code, err := e.db.CreateInvitation(ctx, f.tenant.orgID, owner, fmt.Sprintf("invitee-%d@example.com", n), store.Editor, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	f.invitationID, f.invitationCode = inv.ID, code
	spare, err := e.db.CreateProject(ctx, f.tenant.orgID, fmt.Sprintf("ALPHA-%d spare project", n), "")
	if err != nil {
		t.Fatal(err)
	}
	tn := f.tenant
	for kind, scope := range map[scopeKind]store.TokenScope{
		projectViewer:      {OrgID: tn.orgID, ProjectID: tn.projectID, Role: store.Viewer},
		otherProject:       {OrgID: tn.orgID, ProjectID: spare.ID},
		device:             {OrgID: tn.orgID, ProjectID: tn.projectID, SensorIDs: []int64{tn.sensorID}, Device: true},
		deviceOtherSensors: {OrgID: tn.orgID, ProjectID: tn.projectID, SensorIDs: []int64{tn.instanceID}, Device: true},
		projectOwner:       {OrgID: tn.orgID, ProjectID: tn.projectID},
		piezometerOwner:    {OrgID: tn.orgID, ProjectID: tn.projectID, SensorIDs: []int64{tn.instanceID}},
	} {
		if _, f.scoped[kind], err = e.db.CreateScopedToken(ctx, owner, "scoped", nil, scope); err != nil {
			t.Fatal(err)
		}
	}
	f.levelID, f.ruleID, f.alarmID, f.webhookID = e.newAlarm(t, f.tenant)
	f.source = e.newPiezometer(t, tn, tn.projectID, fmt.Sprintf("ALPHA-%d source", n))
	f.names = namedIDs{org: tn.orgID, project: tn.projectID, sensor: tn.instanceID, source: f.source,
		blueprint: tn.blueprintID, levelID: f.levelID, levelName: "Alarm"}
	instance := store.SensorKey{OrgID: tn.orgID, ProjectID: tn.projectID, SensorID: tn.instanceID}
	if _, err := e.db.SetImportProfile(ctx, instance, store.ImportProfileSpec{TZ: "Europe/Zurich", Columns: map[string]string{"Freq_Avg": "freq"}}); err != nil {
		t.Fatal(err)
	}
	// A spare token of each user, for the operations on /me/tokens/{id}.
	for _, tn := range []tenant{f.tenant, f.other} {
		for role, userID := range tn.userIDs {
			tok, _, err := e.db.CreateToken(ctx, userID, "spare", nil)
			if err != nil {
				t.Fatal(err)
			}
			f.tokenIDs[tn.tokens[role]] = tok.ID
		}
	}
	return f
}

// invitationFor invites the user of token to the fixture's organization and
// returns the code, for acceptMyInvitation, which takes only an invitation
// addressed to its caller; a token of no user gets the fixture's own.
func (e *env) invitationFor(t *testing.T, f matrixFixture, token string) string {
	ctx := t.Context()
	p, err := e.db.Authenticate(ctx, token, 0)
	if err != nil {
		return f.invitationCode
	}
	user, _, err := e.db.Me(ctx, p.UserID)
	if err != nil {
		t.Fatal(err)
	}
	_, code, err := e.db.CreateInvitation(ctx, f.tenant.orgID, f.tenant.userIDs[store.Owner], user.Email, store.Editor, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// pathParam gives each path parameter of the spec its value in a fixture.
// A parameter missing here fails the matrix: a new one needs a decision.
func pathParam(t *testing.T, f matrixFixture, operationID, name, callerToken string) string {
	switch name {
	case "org_id":
		return strconv.FormatInt(f.tenant.orgID, 10)
	case "proj_id", "project_id":
		return strconv.FormatInt(f.tenant.projectID, 10)
	case "sensor_id":
		if operationID == "updateFormulas" || operationID == "updateCalibrations" || operationID == "updateBaselines" || operationID == "updateLinks" ||
			strings.Contains(operationID, "AlarmRule") || strings.Contains(operationID, "ImportProfile") || strings.Contains(operationID, "Checks") {
			return strconv.FormatInt(f.tenant.instanceID, 10) // these need a sensor with a blueprint
		}
		return strconv.FormatInt(f.tenant.sensorID, 10)
	case "blueprint_id":
		return strconv.FormatInt(f.tenant.blueprintID, 10)
	case "level_id":
		return strconv.FormatInt(f.levelID, 10)
	case "rule_id":
		return strconv.FormatInt(f.ruleID, 10)
	case "alarm_id":
		return strconv.FormatInt(f.alarmID, 10)
	case "webhook_id":
		return strconv.FormatInt(f.webhookID, 10)
	case "user_id":
		return strconv.FormatInt(f.target, 10)
	case "invitation_id":
		return strconv.FormatInt(f.invitationID, 10)
	case "token_id":
		if id, ok := f.tokenIDs[callerToken]; ok {
			return strconv.FormatInt(id, 10)
		}
		return "1"
	}
	t.Fatalf("the matrix has no value for path parameter %q; add it to pathParam", name)
	return ""
}

package store_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

func testAuthenticate(t *testing.T, db *store.DB) {
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		org := newOrg(t, db)
		user := newMember(t, db, org, "ada", store.Editor)
		token, secret, err := db.CreateToken(t.Context(), user.ID, "ci", ptr(time.Now().Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := db.Authenticate(t.Context(), secret, org.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := store.Principal{UserID: user.ID, TokenID: token.ID, TokenPrefix: token.Prefix, Role: store.Editor}
		if !reflect.DeepEqual(p, want) {
			t.Fatalf("Authenticate = %+v, want %+v", p, want)
		}
	})
	// A token of a user who is not a member of the organization asked about
	// (or of none, 0) authenticates, without a role there.
	for _, tt := range []struct {
		name     string
		otherOrg bool
	}{{"NotAMember", true}, {"NoOrg", false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			org := newOrg(t, db)
			user := newMember(t, db, org, "ada", store.Owner)
			_, secret, err := db.CreateToken(t.Context(), user.ID, "ci", nil)
			if err != nil {
				t.Fatal(err)
			}
			var orgID int64
			if tt.otherOrg {
				orgID = newOrg(t, db).ID
			}
			p, err := db.Authenticate(t.Context(), secret, orgID)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.UserID, user.ID; got != want {
				t.Fatalf("UserID=%d, want %d", got, want)
			}
			if got, want := p.Role, store.Role(""); got != want {
				t.Fatalf("Role=%q, want %q", got, want)
			}
		})
	}
	t.Run("ErrUnauthorized/Unknown", func(t *testing.T) {
		t.Parallel()
		_, err := db.Authenticate(t.Context(), "rdg_"+strings.Repeat("0", 43), 0)
		wantCode(t, err, apperr.Unauthorized)
	})
	t.Run("ErrUnauthorized/Revoked", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		token, secret, err := db.CreateToken(t.Context(), user.ID, "ci", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.RevokeToken(t.Context(), user.ID, token.ID); err != nil {
			t.Fatal(err)
		}
		_, err = db.Authenticate(t.Context(), secret, 0)
		wantCode(t, err, apperr.Unauthorized)
	})
	t.Run("ErrUnauthorized/Expired", func(t *testing.T) {
		t.Parallel()
		user := newUser(t, db, "ada")
		_, secret, err := db.CreateToken(t.Context(), user.ID, "ci", ptr(time.Now().Add(-time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Authenticate(t.Context(), secret, 0)
		wantCode(t, err, apperr.Unauthorized)
	})
}

func testTouchTokens(t *testing.T, db *store.DB) {
	user := newUser(t, db, "ada")
	touched, _, err := db.CreateToken(t.Context(), user.ID, "touched", nil)
	if err != nil {
		t.Fatal(err)
	}
	untouched, _, err := db.CreateToken(t.Context(), user.ID, "untouched", nil)
	if err != nil {
		t.Fatal(err)
	}
	// lastUsed returns when each token was last used, by id.
	lastUsed := func() map[int64]*time.Time {
		t.Helper()
		tokens, _, err := db.ListTokens(t.Context(), user.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[int64]*time.Time)
		for _, token := range tokens {
			m[token.ID] = token.LastUsedAt
		}
		return m
	}
	later := time.Now().Truncate(time.Microsecond)
	if err := db.TouchTokens(t.Context(), []int64{touched.ID, unknownID}, later); err != nil {
		t.Fatal(err)
	}
	// A batch that arrives late does not move the time back.
	if err := db.TouchTokens(t.Context(), []int64{touched.ID}, later.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := db.TouchTokens(t.Context(), nil, later); err != nil {
		t.Fatal(err)
	}
	used := lastUsed()
	if got := used[touched.ID]; got == nil || !got.Equal(later) {
		t.Fatalf("LastUsedAt=%v, want %v", got, later)
	}
	if got := used[untouched.ID]; got != nil {
		t.Fatalf("LastUsedAt of the untouched token=%v, want nil", got)
	}
}

func tokenID(token store.Token) int64 { return token.ID }

func testScopedToken(t *testing.T, db *store.DB) {
	org := newOrg(t, db)
	editor := newMember(t, db, org, "ed", store.Editor)
	project := newProject(t, db, org)
	sensor := newSensor(t, db, project, nil)
	elsewhere := newSensor(t, db, newProject(t, db, org), nil)
	// The effective role is the lower of the member's and the ceiling's,
	// and follows the member's role.
	t.Run("CeilingFollowsTheMember", func(t *testing.T) {
		user := newMember(t, db, org, "ann", store.Admin)
		_, secret, err := db.CreateScopedToken(t.Context(), user.ID, "ci", nil, store.TokenScope{OrgID: org.ID, Role: store.Editor})
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct{ member, want store.Role }{{store.Admin, store.Editor}, {store.Viewer, store.Viewer}} {
			if err := db.SetMembership(t.Context(), org.ID, user.ID, step.member); err != nil {
				t.Fatal(err)
			}
			p, err := db.Authenticate(t.Context(), secret, org.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Role; got != step.want {
				t.Errorf("member %s, ceiling editor: Role=%q, want %q", step.member, got, step.want)
			}
		}
		// Another organization the user is a member of is out of scope.
		other := newOrg(t, db)
		if err := db.SetMembership(t.Context(), other.ID, user.ID, store.Owner); err != nil {
			t.Fatal(err)
		}
		p, err := db.Authenticate(t.Context(), secret, other.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Role; got != "" {
			t.Errorf("another organization: Role=%q, want none", got)
		}
	})
	t.Run("Device", func(t *testing.T) {
		scope := store.TokenScope{OrgID: org.ID, ProjectID: project.ID, SensorIDs: []int64{sensor.SensorID}, Device: true}
		token, secret, err := db.CreateScopedToken(t.Context(), editor.ID, "logger", nil, scope)
		if err != nil {
			t.Fatal(err)
		}
		scope.Role = store.Editor
		if !reflect.DeepEqual(token.TokenScope, scope) {
			t.Errorf("TokenScope=%+v, want %+v", token.TokenScope, scope)
		}
		p, err := db.Authenticate(t.Context(), secret, org.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Scope, scope) || p.Role != store.Editor {
			t.Errorf("Authenticate = %+v, want scope %+v and role editor", p, scope)
		}
		tokens, _, err := db.ListTokens(t.Context(), editor.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tokens[0].TokenScope, scope) {
			t.Errorf("ListTokens: TokenScope=%+v, want %+v", tokens[0].TokenScope, scope)
		}
	})
	for _, tt := range []struct {
		name  string
		scope store.TokenScope
		want  apperr.Code
	}{
		{"ErrForbidden/AboveTheMember", store.TokenScope{OrgID: org.ID, Role: store.Admin}, apperr.Forbidden},
		{"ErrNotFound/NotAMember", store.TokenScope{OrgID: newOrg(t, db).ID}, apperr.NotFound},
		{"ErrNotFound/UnknownOrg", store.TokenScope{OrgID: unknownID}, apperr.NotFound},
		{"ErrNotFound/ProjectOfAnotherOrg", store.TokenScope{OrgID: org.ID, ProjectID: newProject(t, db, newOrg(t, db)).ID}, apperr.NotFound},
		{"ErrNotFound/SensorOfAnotherProject", store.TokenScope{OrgID: org.ID, ProjectID: project.ID, SensorIDs: []int64{elsewhere.SensorID}}, apperr.NotFound},
		{"ErrInvalid/ProjectWithoutOrg", store.TokenScope{ProjectID: project.ID}, apperr.Invalid},
		{"ErrInvalid/SensorsWithoutProject", store.TokenScope{OrgID: org.ID, SensorIDs: []int64{sensor.SensorID}}, apperr.Invalid},
		{"ErrInvalid/DeviceWithoutProject", store.TokenScope{OrgID: org.ID, Device: true}, apperr.Invalid},
		{"ErrInvalid/DeviceAsViewer", store.TokenScope{OrgID: org.ID, ProjectID: project.ID, Device: true, Role: store.Viewer}, apperr.Invalid},
		{"ErrInvalid/UnknownRole", store.TokenScope{OrgID: org.ID, Role: "root"}, apperr.Invalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := db.CreateScopedToken(t.Context(), editor.ID, "ci", nil, tt.scope)
			wantCode(t, err, tt.want)
		})
	}
	// A token limited to a project goes with it.
	t.Run("ProjectDeleted", func(t *testing.T) {
		doomed := newProject(t, db, org)
		_, secret, err := db.CreateScopedToken(t.Context(), editor.ID, "ci", nil, store.TokenScope{OrgID: org.ID, ProjectID: doomed.ID})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteProject(t.Context(), org.ID, doomed.ID); err != nil {
			t.Fatal(err)
		}
		_, err = db.Authenticate(t.Context(), secret, org.ID)
		wantCode(t, err, apperr.Unauthorized)
	})
}

package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

func TestMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	owner := e.owner(tn)

	added, err := owner.AddMemberWithResponse(ctx, tn.orgID, client.MemberCreate{Email: "Grace@Example.com", Name: ptr("Grace"), Role: client.Editor})
	if err != nil || added.StatusCode() != 201 {
		t.Fatalf("add member: %v %s", err, added.Body)
	}
	grace := added.JSON201.UserId

	t.Run("AddTwice", func(t *testing.T) {
		res, _ := owner.AddMemberWithResponse(ctx, tn.orgID, client.MemberCreate{Email: "grace@example.COM", Role: client.Viewer})
		wantError(t, res.StatusCode(), res.Body, 409, "conflict")
	})
	t.Run("KnownUserJoinsAnotherOrg", func(t *testing.T) {
		other := e.newTenant("Globex")
		res, err := e.owner(other).AddMemberWithResponse(ctx, other.orgID, client.MemberCreate{Email: "grace@example.com", Role: client.Viewer})
		if err != nil || res.StatusCode() != 201 || res.JSON201.UserId != grace || res.JSON201.Name != "Grace" {
			t.Fatalf("add a known user elsewhere: %v %s", err, res.Body)
		}
	})
	t.Run("BadRole", func(t *testing.T) {
		res, body := e.do(tn.tokens[store.Owner], "POST", fmt.Sprintf("/api/v1/org/%d/members", tn.orgID), "application/json",
			strings.NewReader(`{"email":"x@example.com","role":"superuser"}`))
		wantError(t, res.StatusCode, body, 400, "invalid")
	})
	t.Run("BadEmail", func(t *testing.T) {
		res, body := e.do(tn.tokens[store.Owner], "POST", fmt.Sprintf("/api/v1/org/%d/members", tn.orgID), "application/json",
			strings.NewReader(`{"email":"not an email","role":"viewer"}`))
		wantError(t, res.StatusCode, body, 400, "invalid")
	})
	t.Run("Promote", func(t *testing.T) {
		res, err := owner.UpdateMemberWithResponse(ctx, tn.orgID, grace, client.MemberUpdate{Role: client.Owner})
		if err != nil || res.StatusCode() != 200 || res.JSON200.Role != client.Owner {
			t.Fatalf("promote: %v %s", err, res.Body)
		}
	})
	t.Run("NotAMember", func(t *testing.T) {
		res, _ := owner.UpdateMemberWithResponse(ctx, tn.orgID, 999999, client.MemberUpdate{Role: client.Viewer})
		wantError(t, res.StatusCode(), res.Body, 404, "not_found")
	})

	// Two owners now. They demote each other at the same moment: one must
	// stay an owner.
	t.Run("LastOwnerRace", func(t *testing.T) {
		_, graceSecret, err := e.db.CreateToken(ctx, grace, "grace", nil)
		if err != nil {
			t.Fatal(err)
		}
		results := make(chan int, 2)
		demote := func(c *client.ClientWithResponses, who int64) {
			res, err := c.UpdateMemberWithResponse(ctx, tn.orgID, who, client.MemberUpdate{Role: client.Admin})
			if err != nil {
				results <- 0
				return
			}
			results <- res.StatusCode()
		}
		go demote(owner, grace)
		go demote(e.client(graceSecret), tn.userIDs[store.Owner])
		got := []int{<-results, <-results}
		slices.Sort(got)
		if fmt.Sprint(got) != "[200 409]" && fmt.Sprint(got) != "[200 403]" {
			t.Errorf("statuses %v, want one demotion to succeed and the other refused", got)
		}
		members, _, err := e.db.ListMembers(ctx, tn.orgID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		owners := 0
		for _, m := range members {
			if m.Role == store.Owner {
				owners++
			}
		}
		if owners != 1 {
			t.Errorf("%d owners after the race, want 1", owners)
		}
	})

	t.Run("LastOwnerCannotLeave", func(t *testing.T) {
		members, _, _ := e.db.ListMembers(ctx, tn.orgID, 0, 100)
		var last int64
		for _, m := range members {
			if m.Role == store.Owner {
				last = m.UserID
			}
		}
		_, secret, err := e.db.CreateToken(ctx, last, "last owner", nil)
		if err != nil {
			t.Fatal(err)
		}
		c := e.client(secret)
		res, _ := c.RemoveMemberWithResponse(ctx, tn.orgID, last)
		got := wantError(t, res.StatusCode(), res.Body, 409, "conflict")
		if !strings.Contains(got.Message, "last owner") {
			t.Errorf("message %q should say it is the last owner", got.Message)
		}
		demote, _ := c.UpdateMemberWithResponse(ctx, tn.orgID, last, client.MemberUpdate{Role: client.Viewer})
		wantError(t, demote.StatusCode(), demote.Body, 409, "conflict")
		remove, _ := c.RemoveMemberWithResponse(ctx, tn.orgID, tn.userIDs[store.Viewer])
		if remove.StatusCode() != 204 {
			t.Errorf("remove a viewer: %d %s", remove.StatusCode(), remove.Body)
		}
		list, _ := c.ListMembersWithResponse(ctx, tn.orgID, nil)
		for _, m := range list.JSON200.Items {
			if m.UserId == tn.userIDs[store.Viewer] {
				t.Error("the removed viewer is still listed")
			}
		}
	})
}

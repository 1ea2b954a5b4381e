package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// Nothing invalid is ever saved: each bad blueprint or edit is a 400 that
// names the output, and the stored state stays as it was.
func TestFormulaValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	ctx := context.Background()
	admin := e.client(tn.tokens[store.Admin])

	withPressure := func(formula string) client.BlueprintWrite {
		w := piezometerWrite()
		w.Outputs[1].Formula = formula
		return w
	}
	for _, tt := range []struct {
		name  string
		write client.BlueprintWrite
		want  []string
	}{
		{"Syntax", withPressure("G * (R0 - digits"), []string{`output "pressure"`}},
		{"UnknownName", withPressure("G * (R1 - digits)"), []string{`output "pressure"`, "unknown name R1", "column"}},
		{"UnknownFunction", withPressure("Math.sqr(digits)"), []string{`output "pressure"`, "Math.sqr"}},
		{"Cycle", func() client.BlueprintWrite {
			w := withPressure("digits * 2")
			w.Outputs[0].Formula = "pressure / 2"
			return w
		}(), []string{"cycle", "digits", "pressure"}},
		{"NotANumber", withPressure("digits > 1"), []string{`output "pressure"`, "must be a number"}},
		{"TooLong", withPressure(strings.Repeat("G+", 500) + "G"), []string{"1000"}},
		{"DuplicateKey", func() client.BlueprintWrite {
			w := piezometerWrite()
			w.Outputs[0].Key = "freq"
			return w
		}(), []string{`"freq"`, "twice"}},
		{"ReservedKey", func() client.BlueprintWrite {
			w := piezometerWrite()
			w.Inputs[0].Key = "sqrt"
			w.Outputs[0].Formula = "sqrt^2"
			return w
		}(), []string{"reserved"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := admin.CreateBlueprintWithResponse(ctx, tn.orgID, tt.write)
			if err != nil {
				t.Fatal(err)
			}
			got := wantError(t, res.StatusCode(), res.Body, 400, "invalid")
			for _, want := range tt.want {
				if !strings.Contains(got.Message, want) {
					t.Errorf("message %q lacks %q", got.Message, want)
				}
			}
		})
	}
	res, body := e.do(tn.tokens[store.Admin], "POST", fmt.Sprintf("/api/v1/org/%d/blueprints", tn.orgID), "application/json",
		strings.NewReader(`{"name":"x","inputs":[{"key":"2x","name":"bad"}],"outputs":[]}`))
	wantError(t, res.StatusCode, body, 400, "invalid")
	if list, _ := admin.ListBlueprintsWithResponse(ctx, tn.orgID, nil); len(list.JSON200.Items) != 1 {
		t.Errorf("%d blueprints after refused ones, want the fixture's 1", len(list.JSON200.Items))
	}

	before, _ := admin.GetSensorWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID)
	for _, tt := range []struct {
		name    string
		body    client.FormulasUpdate
		details map[string]any
	}{
		{"BadFormula", client.FormulasUpdate{Outputs: &map[string]string{"pressure": "G * nope"}, Constants: &map[string]*float64{"G": ptr(5.0)}}, map[string]any{"output": "pressure"}},
		{"Cycle", client.FormulasUpdate{Outputs: &map[string]string{"digits": "pressure + freq"}}, map[string]any{"output": "digits"}},
		{"UnknownOutput", client.FormulasUpdate{Outputs: &map[string]string{"head": "pressure / 9.81"}}, map[string]any{"output": "head"}},
		{"UnknownConstant", client.FormulasUpdate{Constants: &map[string]*float64{"K": ptr(1.0)}}, map[string]any{"constant": "K"}},
	} {
		t.Run("Edit"+tt.name, func(t *testing.T) {
			res, _ := admin.UpdateFormulasWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID, tt.body)
			got := wantError(t, res.StatusCode(), res.Body, 400, "invalid")
			for key, want := range tt.details {
				if got.Details == nil || (*got.Details)[key] != want {
					t.Errorf("details %v, want %s = %v, for the client to show the error by its field", got.Details, key, want)
				}
			}
		})
	}
	for _, tt := range []struct {
		name string
		body string
	}{
		{"UnknownConstant", `{"K":[{"from":"2024-06-01T00:00:00Z","value":1}]}`},
		{"TwiceOneInstant", `{"G":[{"from":"2024-06-01T00:00:00Z","value":1},{"from":"2024-06-01T02:00:00+02:00","value":2}]}`},
		{"SevenDigits", `{"G":[{"from":"2024-06-01T00:00:00.1234567Z","value":1}]}`},
		{"NoZone", `{"G":[{"from":"2024-06-01T00:00:00","value":1}]}`},
		{"NoValue", `{"G":[{"from":"2024-06-01T00:00:00Z"}]}`},
		{"ValueString", `{"G":[{"from":"2024-06-01T00:00:00Z","value":"1"}]}`},
		{"Empty", `{}`},
	} {
		t.Run("Calibrations"+tt.name, func(t *testing.T) {
			res, body := e.do(tn.tokens[store.Admin], "PUT",
				fmt.Sprintf("/api/v1/org/%d/proj/%d/sensors/%d/calibrations", tn.orgID, tn.projectID, tn.instanceID),
				"application/json", strings.NewReader(tt.body))
			wantError(t, res.StatusCode, body, 400, "invalid")
		})
	}
	after, _ := admin.GetSensorWithResponse(ctx, tn.orgID, tn.projectID, tn.instanceID)
	if string(after.Body) != string(before.Body) {
		t.Errorf("refused edits changed the sensor:\nbefore %s\nafter  %s", before.Body, after.Body)
	}
}

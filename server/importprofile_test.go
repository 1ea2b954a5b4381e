package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sensorreadings/readings/gen/client"
	"github.com/sensorreadings/readings/store"
)

// TestImportProfile walks a sensor's import profile: set, read, used by a
// file POST without parameters, overridden by the query, refused when
// wrong, deleted.
func TestImportProfile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tn := e.newTenant("Acme")
	c := e.client(tn.tokens[store.Editor])
	id := piezometerIDs(t, c, tn)
	// The logger's own names: Freq_Avg and Temp_Avg name no input.
	file := strings.NewReplacer(`"freq","temp"`, `"Freq_Avg","Temp_Avg"`).Replace(fixture(t, "dam.toa5"))

	res := postFile(t, c, tn, tn.instanceID, client.PostReadingsParams{}, file)
	wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid")

	profile := client.ImportProfileInput{Tz: ptr("Europe/Zurich"), Dst: ptr(client.Earlier),
		Columns: &map[string]string{"Freq_Avg": "freq", "Temp_Avg": id["temp"]}}
	set, err := c.SetImportProfileWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID, profile)
	if err != nil || set.JSON200 == nil {
		t.Fatalf("PUT profile: %v %s", err, set.Body)
	}
	wantProfile := fmt.Sprintf("{columns:map[Freq_Avg:freq Temp_Avg:temp] dst:earlier sensor:%d tz:Europe/Zurich}", tn.instanceID)
	show := func(p *client.ImportProfile) string {
		return fmt.Sprintf("{columns:%v dst:%s sensor:%d tz:%s}", p.Columns, deref(p.Dst), p.SensorId, p.Tz)
	}
	if got := show(set.JSON200); got != wantProfile {
		t.Errorf("PUT profile = %s, want %s", got, wantProfile)
	}
	get, err := e.client(tn.tokens[store.Viewer]).GetImportProfileWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID)
	if err != nil || get.JSON200 == nil {
		t.Fatalf("GET profile: %v %s", err, get.Body)
	}
	if got := show(get.JSON200); got != wantProfile {
		t.Errorf("GET profile = %s, want %s", got, wantProfile)
	}

	t.Run("QueryOverrides", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			params client.PostReadingsParams
			want   string // the datetime of the file's second reading
		}{
			{"Profile", client.PostReadingsParams{}, "2024-10-27T00:30:00.000Z"},
			{"Dst", client.PostReadingsParams{Dst: ptr(client.Later)}, "2024-10-27T01:30:00.000Z"},
			{"Tz", client.PostReadingsParams{Tz: ptr("UTC")}, "2024-10-27T02:30:00.000Z"},
		} {
			tc.params.DryRun = ptr(true)
			answer := fileImport(t, postFile(t, c, tn, tn.instanceID, tc.params, file))
			if answer.Preview == nil || len(*answer.Preview) != 3 {
				t.Fatalf("%s: preview %v, want 3 readings", tc.name, answer.Preview)
			}
			if got := string((*answer.Preview)[1].Datetime); got != tc.want {
				t.Errorf("%s: the second reading at %s, want %s", tc.name, got, tc.want)
			}
		}
	})

	t.Run("QueryColumns", func(t *testing.T) {
		// The query's mapping replaces the profile's: Temp_Avg alone, into freq.
		params := client.PostReadingsParams{Columns: ptr("Temp_Avg:freq"), DryRun: ptr(true)}
		answer := fileImport(t, postFile(t, c, tn, tn.instanceID, params, file))
		if answer.Preview == nil || len(*answer.Preview) != 2 {
			t.Fatalf("preview %v, want 2 readings (Temp_Avg is NAN on two lines)", answer.Preview)
		}
		if got, want := fmt.Sprint((*answer.Preview)[0].Inputs), fmt.Sprintf("map[%s:11.2]", id["freq"]); got != want {
			t.Errorf("first reading %s, want %s", got, want)
		}
		if got, want := fmt.Sprint(answer.IgnoredColumns), "[RECORD Freq_Avg batt_volt]"; got != want {
			t.Errorf("ignored %s, want %s", got, want)
		}
		for _, tc := range []struct{ columns, says string }{
			{"Freq_Avg:frequency", `column "Freq_Avg": "frequency" is not an input of the sensor`},
			{"Freq_Avg", `"Freq_Avg" is not column:input`},
			{"Freq_Avg:freq,Freq_Avg:temp", "names its column twice"},
			{"a:freq,b:freq", `columns "a" and "b" both feed input freq`},
		} {
			res := postFile(t, c, tn, tn.instanceID, client.PostReadingsParams{Columns: &tc.columns}, file)
			if got := wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid"); !strings.Contains(got.Message, tc.says) {
				t.Errorf("columns=%s: message %q, want it to say %q", tc.columns, got.Message, tc.says)
			}
		}
	})

	answer := fileImport(t, postFile(t, c, tn, tn.instanceID, client.PostReadingsParams{}, file))
	want := client.FileImport{Readings: 3, New: 3, Skipped: 1, IgnoredColumns: []string{"RECORD", "batt_volt"}}
	if fmt.Sprint(answer) != fmt.Sprint(want) {
		t.Errorf("answer %+v, want %+v", answer, want)
	}
	wantStored := []string{
		"2024-10-26T23:30:00.000Z " + id["freq"] + "=2803.5 " + id["temp"] + "=11.2",
		"2024-10-27T00:30:00.000Z " + id["freq"] + "=2803.25",
		"2024-10-27T03:30:00.250Z " + id["freq"] + "=2802.75 " + id["temp"] + "=11",
	}
	if got := stored(t, c, tn, tn.instanceID); !slices.Equal(got, wantStored) {
		t.Errorf("stored\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantStored, "\n"))
	}

	t.Run("Refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			sensor int64
			in     client.ImportProfileInput
			says   string
		}{
			{"UnknownKey", tn.instanceID, client.ImportProfileInput{Columns: &map[string]string{"Freq_Avg": "frequency"}},
				`column "Freq_Avg": "frequency" is not an input of the sensor (its inputs are freq or ` + id["freq"]},
			{"Output", tn.instanceID, client.ImportProfileInput{Columns: &map[string]string{"P": "pressure"}}, `"pressure" is not an input`},
			{"TwoColumnsOneInput", tn.instanceID, client.ImportProfileInput{Columns: &map[string]string{"a": "freq", "b": id["freq"]}},
				`columns "a" and "b" both feed input`},
			{"BadZone", tn.instanceID, client.ImportProfileInput{Tz: ptr("Europe/Atlantis")}, `tz "Europe/Atlantis" is not an IANA time zone`},
			{"KeyWithoutBlueprint", tn.sensorID, client.ImportProfileInput{Columns: &map[string]string{"ch1": "freq"}},
				"the sensor has no blueprint, so inputs are decimal ids"},
		} {
			res, err := c.SetImportProfileWithResponse(t.Context(), tn.orgID, tn.projectID, tc.sensor, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid"); !strings.Contains(got.Message, tc.says) {
				t.Errorf("%s: message %q, want it to say %q", tc.name, got.Message, tc.says)
			}
		}
		get, err := c.GetImportProfileWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID)
		if err != nil || get.JSON200 == nil || show(get.JSON200) != wantProfile {
			t.Errorf("after the refusals: %v %s, want the profile unchanged", err, get.Body)
		}
	})

	t.Run("WithoutBlueprint", func(t *testing.T) {
		res, err := c.SetImportProfileWithResponse(t.Context(), tn.orgID, tn.projectID, tn.sensorID,
			client.ImportProfileInput{Columns: &map[string]string{"ch1": "7"}})
		if err != nil || res.JSON200 == nil {
			t.Fatalf("PUT profile: %v %s", err, res.Body)
		}
		if got, want := fmt.Sprint(res.JSON200.Columns, " ", res.JSON200.Tz, " ", res.JSON200.Dst), "map[ch1:7] UTC <nil>"; got != want {
			t.Errorf("profile %s, want %s", got, want)
		}
		answer := fileImport(t, postFile(t, c, tn, tn.sensorID, client.PostReadingsParams{}, "datetime,RECORD,ch1,ch2\n2024-05-01 00:00:00,1,2.5,NAN\n"))
		if got, want := fmt.Sprint(answer.New, answer.IgnoredColumns), "1 [RECORD ch2]"; got != want {
			t.Errorf("new, ignored = %s, want %s", got, want)
		}
		if got, want := stored(t, c, tn, tn.sensorID), []string{"2024-05-01T00:00:00.000Z 7=2.5"}; !slices.Equal(got, want) {
			t.Errorf("stored %v, want %v", got, want)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		del, err := c.DeleteImportProfileWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID)
		if err != nil || del.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE profile: %v %s", err, del.Body)
		}
		get, err := c.GetImportProfileWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID)
		if err != nil || get.JSON200 == nil {
			t.Fatalf("GET profile: %v %s", err, get.Body)
		}
		want := fmt.Sprintf("{columns:map[] dst: sensor:%d tz:UTC}", tn.instanceID)
		if got := show(get.JSON200); got != want || get.JSON200.UpdatedAt != nil {
			t.Errorf("GET profile after delete = %s %v, want the defaults %s without updated_at", got, get.JSON200.UpdatedAt, want)
		}
		if del, err = c.DeleteImportProfileWithResponse(t.Context(), tn.orgID, tn.projectID, tn.instanceID); err != nil || del.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE profile again: %v %s, want 204", err, del.Body)
		}
		res := postFile(t, c, tn, tn.instanceID, client.PostReadingsParams{}, file)
		got := wantError(t, res.StatusCode(), res.Body, http.StatusBadRequest, "invalid")
		wantRefusal(t, got, "line", "2", "no column names an input")
	})
}

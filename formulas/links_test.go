package formulas_test

import (
	"math"
	"testing"
	"time"

	"github.com/sensorreadings/readings/formulas"
)

var noon = time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)

// TestLinkAt asks a link with samples at noon and 12:30 and an hour's
// staleness, in ascending order and then back in time, as an order=desc
// page does.
func TestLinkAt(t *testing.T) {
	l := formulas.NewLink([]formulas.Sample{{noon, 1000}, {noon.Add(30 * time.Minute), 1010}}, time.Hour)
	for _, tt := range []struct {
		name   string
		at     time.Time
		want   float64
		wantOK bool
	}{
		{"BeforeAnySample", noon.Add(-time.Microsecond), 0, false},
		{"OnASample", noon, 1000, true},
		{"BetweenSamples", noon.Add(29 * time.Minute), 1000, true},
		{"OnTheSecond", noon.Add(30 * time.Minute), 1010, true},
		{"ExactlyAtTheBound", noon.Add(90 * time.Minute), 1010, true},
		{"AMicrosecondPastTheBound", noon.Add(90*time.Minute + time.Microsecond), 0, false},
		{"BackInTime", noon.Add(10 * time.Minute), 1000, true},
		{"BackBeforeAnySample", noon.Add(-time.Hour), 0, false},
		{"ForwardAgain", noon.Add(time.Hour), 1010, true},
	} {
		got, ok := l.At(tt.at)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: At = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
	if _, ok := formulas.NewLink(nil, time.Hour).At(noon); ok {
		t.Error("a link without samples has a value")
	}
	if _, ok := formulas.NewLink([]formulas.Sample{{noon, 1}, {noon.Add(time.Minute), math.NaN()}}, time.Hour).At(noon.Add(2 * time.Minute)); ok {
		t.Error("a NaN sample does not make the input missing")
	}
}

// TestOutputsLinked corrects a piezometer for the air pressure of a
// barometer whose reading is itself corrected by a thermometer: a chain of
// two links, each source's values computed by its own Outputs. The link
// wins over a value the piezometer's reading carries, and a stale or
// missing source leaves the corrected output absent, as a missing input
// does.
func TestOutputsLinked(t *testing.T) {
	thermometer := []formulas.Sample{{noon.Add(-10 * time.Minute), 30}}

	// The barometer: raw pressure, temperature linked to the thermometer.
	baroProgram, err := formulas.Compile(formulas.Spec{
		Inputs:  []string{"raw", "temp"},
		Outputs: []formulas.Output{{Key: "kpa", Formula: "raw - 0.01 * (temp - 20)"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	baro := formulas.NewOutputs(baroProgram, formulas.Instance{
		InputIDs:  []int64{1, 2},
		OutputIDs: []int64{3},
		Links:     []*formulas.Link{nil, formulas.NewLink(thermometer, time.Hour)},
	})
	var air []formulas.Sample
	for _, r := range []struct {
		at  time.Time
		raw float64
	}{{noon, 100.2}, {noon.Add(time.Hour), 100.5}} {
		baro.Compute(r.at, []int64{1}, []float64{r.raw})
		if v, ok := baro.Value(0); ok {
			air = append(air, formulas.Sample{Time: r.at, Value: v})
		}
	}
	// At 13:00 the thermometer's reading is 70 minutes old: no kPa then.
	if len(air) != 1 || !near(air[0].Value, 100.1) {
		t.Fatalf("barometer samples = %v, want one of 100.1 at noon", air)
	}

	piezoProgram, err := formulas.Compile(formulas.Spec{
		Inputs:  []string{"absolute", "air"},
		Outputs: []formulas.Output{{Key: "gauge", Formula: "absolute - air"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	piezo := formulas.NewOutputs(piezoProgram, formulas.Instance{
		InputIDs:  []int64{10, 11},
		OutputIDs: []int64{12},
		Links:     []*formulas.Link{nil, formulas.NewLink(air, 30*time.Minute)},
	})
	for _, tt := range []struct {
		name   string
		at     time.Time
		ids    []int64
		values []float64
		want   float64
		wantOK bool
	}{
		{"BeforeTheBarometer", noon.Add(-time.Minute), []int64{10}, []float64{150.1}, 0, false},
		{"Linked", noon.Add(time.Minute), []int64{10}, []float64{150.1}, 50, true},
		{"TheLinkWins", noon.Add(time.Minute), []int64{10, 11}, []float64{150.1, 90}, 50, true},
		{"Stale", noon.Add(31 * time.Minute), []int64{10, 11}, []float64{150.1, 90}, 0, false},
	} {
		piezo.Compute(tt.at, tt.ids, tt.values)
		if v, ok := piezo.Value(0); ok != tt.wantOK || (ok && !near(v, tt.want)) {
			t.Errorf("%s: gauge = %v, %v; want %v, %v", tt.name, v, ok, tt.want, tt.wantOK)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

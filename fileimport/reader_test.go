package fileimport

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// TestFileLocalTimesRoundTrip writes every quarter hour of a year, in
// zones with summer time of an hour and of half an hour, as a logger's
// local time, and checks that each reading's instant shows that local time
// again: the offset cache must never carry an offset past a transition.
func TestFileLocalTimesRoundTrip(t *testing.T) {
	for _, zone := range []string{"Europe/Zurich", "America/Santiago", "Australia/Lord_Howe", "Asia/Kolkata"} {
		t.Run(zone, func(t *testing.T) {
			loc, err := time.LoadLocation(zone)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString("datetime,1\n")
			var want []string
			for wall := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC); wall.Year() == 2024; wall = wall.Add(15 * time.Minute) {
				text := wall.Format("2006-01-02 15:04:05")
				t, _ := time.ParseInLocation("2006-01-02 15:04:05", text, loc)
				if t.Format("2006-01-02 15:04:05") != text {
					continue // in a gap
				}
				fmt.Fprintf(&b, "%s,1\n", text)
				want = append(want, text)
			}
			readings, err := readAll(b.String(), Options{Loc: loc, DST: "earlier"})
			if err != nil {
				t.Fatal(err)
			}
			if len(readings) != len(want) {
				t.Fatalf("%d readings, want %d", len(readings), len(want))
			}
			for i, r := range readings {
				if got := r.Time.In(loc).Format("2006-01-02 15:04:05"); got != want[i] {
					t.Fatalf("line %d: %s read as %s, which is %s there", i+2, want[i], r.Time, got)
				}
			}
		})
	}
}

// TestFileLocalTimesAtTheEnds refuses local times whose instant falls
// outside the years a reading can have, as an RFC 3339 datetime with the
// same offset is refused, and takes those just inside.
func TestFileLocalTimesAtTheEnds(t *testing.T) {
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	for _, tc := range []struct {
		name, line string
		loc        *time.Location
		want       string // in the error; empty: read
	}{
		{"first day east of UTC", "0001-01-01 00:00:00,1", zone("Europe/Zurich"), "outside 0001-01-01 to 9999-12-31 in UTC"},
		{"last day west of UTC", "9999-12-31 23:00:00,1", zone("America/New_York"), "outside 0001-01-01 to 9999-12-31 in UTC"},
		{"first day west of UTC", "0001-01-01 00:00:00,1", zone("America/New_York"), ""},
		{"last day east of UTC", "9999-12-31 23:00:00,1", zone("Europe/Zurich"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readings, err := readAll("datetime,1\n"+tc.line+"\n", Options{Loc: tc.loc, DST: "earlier"})
			if tc.want == "" {
				if err != nil || len(readings) != 1 {
					t.Fatalf("got %v, %v; want one reading", readings, err)
				}
				return
			}
			e, ok := errors.AsType[*apperr.Error](err)
			if !ok || e.Code != apperr.Invalid || !strings.Contains(e.Message, tc.want) || !strings.Contains(e.Message, "line 2") {
				t.Fatalf("got %v, %v; want an invalid error on line 2 saying %q", readings, err, tc.want)
			}
		})
	}
}

// readAll reads every reading of a file, each a copy.
func readAll(body string, opts Options) ([]store.Reading, error) {
	file, err := NewReader(strings.NewReader(body), opts)
	if err != nil {
		return nil, err
	}
	var readings []store.Reading
	for {
		r, err := file.Next()
		if err != nil || r == nil {
			return readings, err
		}
		readings = append(readings, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
	}
}

var fileSeeds = []string{
	"datetime,1,2\n2024-05-01T12:00:00Z,1.5,NAN\n2024-05-01 14:00:00,,2\n",
	"\uFEFFdatetime,1\n2024-10-27 02:30:00,1\n",
	"datetime,1\n2024-03-31 02:30:00,1\n",
	"datetime,1,1\n", "datetime\n", "", "\n\n", "datetime,1\n2024-05-01 00:00:00,\"1\n",
	"\"TOA5\",\"a\"\n\"TIMESTAMP\",\"RECORD\",\"1\"\n\"TS\",\"RN\",\"\"\n\"\",\"\",\"Smp\"\n\"2024-05-01 00:00:00\",0,NAN\n\"2024-05-01 00:10:00\",1,1e3\n",
	"\"TOA5\"\n\"TIMESTAMP\",\"1\"\n",
	"datetime,RECORD,Freq_Avg,temp\n2024-05-01 00:00:00,1,2800.5,NAN\n",
	"datetime,,1\n0001-01-01 00:00:00,,0", // an instant before year 1 in Zurich
}

// FuzzParseReadingsFile feeds the file parser anything: it must not panic,
// must refuse with a 400 that names where, and what it accepts must be
// readings the store can take.
func FuzzParseReadingsFile(f *testing.F) {
	for _, seed := range fileSeeds {
		f.Add(seed, uint8(0))
		f.Add(seed, uint8(1))
		f.Add(seed, uint8(6))
	}
	zurich, err := time.LoadLocation("Europe/Zurich")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string, mode uint8) {
		opts := Options{Loc: time.UTC}
		if mode&1 == 1 {
			opts.Loc, opts.DST = zurich, "later"
		}
		if mode&2 == 2 {
			opts.Instance = &store.Instance{Inputs: []store.InstanceInput{{ID: 1, Key: "freq"}, {ID: 2, Key: "temp"}}}
		}
		if mode&4 == 4 { // an import profile's mapping
			opts.Columns = map[string]int64{"Freq_Avg": 1, "RECORD": 3}
		}
		readings, err := readAll(body, opts)
		if err != nil {
			if e, ok := errors.AsType[*apperr.Error](err); !ok || e.Code != apperr.Invalid || e.Message == "" {
				t.Fatalf("error %v, want an invalid apperr.Error", err)
			}
			return
		}
		if len(readings) == 0 {
			t.Fatalf("no reading and no error")
		}
		for i, r := range readings {
			if len(r.InputIDs) == 0 || len(r.InputIDs) != len(r.Values) {
				t.Fatalf("reading %d: ids %v, values %v", i, r.InputIDs, r.Values)
			}
			for j, v := range r.Values {
				if math.IsNaN(v) || math.IsInf(v, 0) || (j > 0 && r.InputIDs[j] <= r.InputIDs[j-1]) {
					t.Fatalf("reading %d: ids %v, values %v", i, r.InputIDs, r.Values)
				}
			}
			if r.Time.Before(store.MinTime) || r.Time.After(store.MaxTime) {
				t.Fatalf("reading %d at %v, outside what the store takes", i, r.Time)
			}
		}
	})
}

// TestFileSecondsOfAMinute is an equivalence test of the minute a Reader
// keeps: a file of a line every 7 seconds (minutes kept from any second)
// over two hours around each transition of Europe/Zurich's summer time,
// written as loggers write it, must read as the same file written with a
// fraction, which is parsed whole each line.
func TestFileSecondsOfAMinute(t *testing.T) {
	zurich, err := time.LoadLocation("Europe/Zurich")
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []time.Time{time.Date(2024, 3, 31, 1, 0, 0, 0, time.UTC), time.Date(2024, 10, 27, 1, 0, 0, 0, time.UTC)} {
		var plain, fraction strings.Builder
		plain.WriteString("datetime,1\n")
		fraction.WriteString("datetime,1\n")
		for wall := from; wall.Before(from.Add(2 * time.Hour)); wall = wall.Add(7 * time.Second) {
			if wall.Hour() == 2 && from.Month() == time.March {
				continue // in the gap
			}
			fmt.Fprintf(&plain, "%s,1\n", wall.Format("2006-01-02 15:04:05"))
			fmt.Fprintf(&fraction, "%s.0,1\n", wall.Format("2006-01-02 15:04:05"))
		}
		for _, dst := range []string{"earlier", "later"} {
			got, err := readAll(plain.String(), Options{Loc: zurich, DST: dst})
			if err != nil {
				t.Fatal(err)
			}
			want, err := readAll(fraction.String(), Options{Loc: zurich, DST: dst})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, func(a, b store.Reading) bool { return a.Time.Equal(b.Time) }) {
				t.Errorf("%s, dst=%s: the seconds of a minute read otherwise than written with a fraction", from.Format(time.DateOnly), dst)
			}
		}
	}
	_, err = readAll("datetime,1\n2024-05-01 12:00:59,1\n2024-05-01 12:00:60,1\n", Options{Loc: time.UTC})
	if want := "line 3, column datetime: datetime \"2024-05-01 12:00:60\": leap seconds cannot be stored"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a leap second after its minute: %v, want %s…", err, want)
	}
}

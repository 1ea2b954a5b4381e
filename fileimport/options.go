package fileimport

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones for files, whatever the host has installed

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

// Overrides are what a request says of one file, each overriding the
// import profile's: nil says nothing.
type Overrides struct {
	TZ      *string // an IANA time zone
	DST     *string // earlier or later
	Columns *string // column:input pairs, comma-separated, inputs by key or id
}

// OptionsOf reads how to parse a file into inst's inputs: from the
// sensor's import profile, if it has one (nil: none), and from o. It
// returns Invalid for a zone that is not an IANA time zone and for columns
// that are not column:input pairs of inst's inputs.
func OptionsOf(inst *store.Instance, profile *store.ImportProfile, o Overrides) (Options, error) {
	opts := Options{Instance: inst, Loc: time.UTC}
	if profile != nil {
		opts.Columns = make(map[string]int64, len(profile.Columns))
		for _, c := range profile.Columns {
			opts.Columns[c.Name] = c.InputID
		}
		loc, err := LoadZone(profile.TZ, map[string]any{"field": "tz"})
		if err != nil {
			return opts, err
		}
		opts.Loc, opts.DST = loc, profile.DST
	}
	if o.TZ != nil {
		loc, err := LoadZone(*o.TZ, map[string]any{"parameter": "tz"})
		if err != nil {
			return opts, err
		}
		opts.Loc = loc
	}
	if o.DST != nil {
		opts.DST = *o.DST
	}
	if o.Columns != nil {
		spec := map[string]string{}
		for pair := range strings.SplitSeq(*o.Columns, ",") {
			column, input, ok := strings.Cut(pair, ":")
			if _, twice := spec[column]; !ok || column == "" || twice {
				return opts, &apperr.Error{Code: apperr.Invalid, Details: map[string]any{"parameter": "columns"},
					Message: fmt.Sprintf("columns: %q is not column:input, or names its column twice; write columns=Freq_Avg:freq,Temp_Avg:temp", pair)}
			}
			spec[column] = input
		}
		columns, err := store.ResolveColumns(inst, spec)
		if err != nil {
			return opts, err
		}
		opts.Columns = columns
	}
	return opts, nil
}

// LoadZone loads an IANA time zone a client named; Invalid otherwise, with
// details saying where the name came from.
func LoadZone(name string, details map[string]any) (*time.Location, error) {
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" || name == "Local" {
		return nil, &apperr.Error{Code: apperr.Invalid, Details: details,
			Message: fmt.Sprintf("tz %q is not an IANA time zone such as Europe/Zurich, UTC or Etc/GMT-1", name)}
	}
	return loc, nil
}

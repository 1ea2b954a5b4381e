// Package fileimport reads the files a datalogger writes, CSV and
// Campbell Scientific's TOA5, into readings as they stream: bytes in,
// readings out, a line at a time, with the sensor's import profile saying
// which column feeds which input and what time zone the datetimes are in.
// No HTTP, no SQL.
package fileimport

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones for files, whatever the host has installed

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/datetime"
	"github.com/sensorreadings/readings/store"
)

// Options say how to read a file of readings.
type Options struct {
	// Instance is the sensor's, whose inputs columns name by key or id;
	// nil for a sensor without a blueprint, whose columns name any input id.
	Instance *store.Instance
	// Columns are the import profile's: the input id each column feeds,
	// whatever its name.
	Columns map[string]int64
	Loc     *time.Location // of datetimes written without a zone
	DST     string         // "earlier", "later", or "" to refuse a time in the fold
}

// fileColumn is a column that feeds an input.
type fileColumn struct {
	index int // in the file's lines
	id    int64
	name  string
}

// Reader reads a CSV or TOA5 file as it streams, a line at a time, and
// yields its readings: it holds one line, and one reading, whatever the
// file's length. Errors are Invalid and name the line and the column.
type Reader struct {
	opts    Options
	lines   *lineReader
	width   int          // cells a line has
	columns []fileColumn // by input id
	names   []string     // of every column, for errors
	zone    zoneCache
	wall    []byte // a datetime being parsed
	minute  minuteCache
	reading store.Reading // the last one yielded, its slices reused

	readings int      // yielded so far
	skipped  int      // lines with every input missing
	ignored  []string // columns that feed no input
}

// NewReader reads a file's header, and is ready to yield its readings.
// A read error of r that is an *apperr.Error (a body too large, say) is
// returned as it is.
func NewReader(r io.Reader, opts Options) (*Reader, error) {
	p := &Reader{opts: opts, lines: newLineReader(r)}
	if err := p.header(); err != nil {
		return nil, err
	}
	return p, nil
}

// Next returns the file's next reading, valid until the following call, or
// nil after the last; a file without a reading is an error.
func (p *Reader) Next() (*store.Reading, error) {
	for {
		record, err := p.lines.read()
		if errors.Is(err, io.EOF) {
			if p.readings == 0 {
				return nil, apperr.Errorf(apperr.Invalid, "the file has no readings: no line after the header has a value for an input")
			}
			return nil, nil
		}
		if err != nil {
			return nil, p.readError(err)
		}
		found, err := p.line(record)
		if err != nil {
			return nil, err
		}
		if found {
			p.readings++
			return &p.reading, nil
		}
	}
}

// Readings is how many readings Next has yielded.
func (p *Reader) Readings() int { return p.readings }

// Skipped is how many lines Next has skipped because every input was
// missing.
func (p *Reader) Skipped() int { return p.skipped }

// Ignored is the columns that feed no input, such as RECORD.
func (p *Reader) Ignored() []string { return p.ignored }

// Where names the line of the reading Next returned last, for an error
// about that reading, and gives the error's details.
func (p *Reader) Where() (string, map[string]any) {
	line := p.lineOf()
	return fmt.Sprintf("line %d", line), map[string]any{"line": line}
}

// header reads the header lines: CSV's one (datetime, then columns) or
// TOA5's four (environment, field names, units, processing).
func (p *Reader) header() error {
	cells, err := p.lines.read()
	if err != nil {
		return p.readError(err)
	}
	names := stringsOf(cells)
	if len(names) > 0 {
		names[0] = strings.TrimPrefix(names[0], "\uFEFF") // a byte-order mark, as spreadsheets write
	}
	timeColumn := "datetime"
	if names[0] == "TOA5" {
		timeColumn = "TIMESTAMP"
		if cells, err = p.lines.read(); err != nil {
			return p.readError(err)
		}
		names = stringsOf(cells)
	}
	p.names = names
	if p.names[0] != timeColumn {
		return p.errorAt(p.lineOf(), 0, "the first column must be %s; it is %q", timeColumn, p.names[0])
	}
	p.width = len(p.names)
	if err := p.mapColumns(); err != nil {
		return err
	}
	if timeColumn == "TIMESTAMP" {
		for range 2 { // units and processing
			record, err := p.lines.read()
			if err != nil {
				return p.readError(err)
			}
			if len(record) != p.width {
				return p.errorAt(p.lineOf(), -1, "a TOA5 header line has %d cells; the field names have %d", len(record), p.width)
			}
		}
	}
	return nil
}

// mapColumns finds the input each column feeds, by key or id.
func (p *Reader) mapColumns() error {
	line := p.lineOf()
	for i, name := range p.names[1:] {
		id, ok := p.inputOf(name)
		if !ok {
			p.ignored = append(p.ignored, name)
			continue
		}
		if j := slices.IndexFunc(p.columns, func(c fileColumn) bool { return c.id == id }); j >= 0 {
			return p.errorAt(line, i+1, "columns %q and %q both feed input %d", p.columns[j].name, name, id)
		}
		p.columns = append(p.columns, fileColumn{index: i + 1, id: id, name: name})
	}
	if len(p.columns) == 0 {
		return p.errorAt(line, -1, "no column names an input of the sensor; name columns by input key or id, or map them in the sensor's import profile (%s)", p.opts.Instance.InputList())
	}
	slices.SortFunc(p.columns, func(a, b fileColumn) int { return cmp.Compare(a.id, b.id) })
	return nil
}

func (p *Reader) inputOf(name string) (int64, bool) {
	if id, ok := p.opts.Columns[name]; ok {
		return id, p.opts.Instance == nil || slices.ContainsFunc(p.opts.Instance.Inputs, func(in store.InstanceInput) bool { return in.ID == id })
	}
	if name == "RECORD" {
		return 0, false
	}
	return p.opts.Instance.InputID(name)
}

// line reads one line into p.reading, and says whether it is a reading: a
// line with every input missing is skipped.
func (p *Reader) line(record [][]byte) (bool, error) {
	line := p.lineOf()
	if len(record) != p.width {
		return false, p.errorAt(line, -1, "the line has %d cells; the header has %d", len(record), p.width)
	}
	t, err := p.datetime(record[0])
	if err != nil {
		return false, p.errorAt(line, 0, "%v", err)
	}
	r := &p.reading
	r.Time, r.InputIDs, r.Values = t, r.InputIDs[:0], r.Values[:0]
	for _, c := range p.columns {
		cell := record[c.index]
		switch string(cell) {
		case "", "NAN", "NaN", "nan":
			continue
		}
		v, err := parseNumber(cell)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return false, p.errorAt(line, c.index, "%q is not a finite number; write a missing value as NAN or leave the cell empty", cell)
		}
		r.InputIDs = append(r.InputIDs, c.id)
		r.Values = append(r.Values, v)
	}
	if len(r.InputIDs) == 0 {
		p.skipped++
		return false, nil
	}
	return true, nil
}

// datetime parses a line's datetime: RFC 3339 with a zone, or local time
// in opts.loc written 2006-01-02 15:04:05[.ffffff] (TOA5's form) or with a T.
func (p *Reader) datetime(cell []byte) (time.Time, error) {
	if len(cell) < len("2006-01-02 15:04:05") || (cell[10] != ' ' && cell[10] != 'T') {
		return time.Time{}, fmt.Errorf("datetime %q is neither 2006-01-02 15:04:05 (local time) nor RFC 3339 such as 2024-05-01T12:00:00Z", cell)
	}
	wall, ok := p.minute.second(cell)
	if !ok {
		p.wall = append(p.wall[:0], cell...)
		p.wall[10] = 'T'
		if hasZone(cell) {
			return datetime.Parse(p.wall)
		}
		p.wall = append(p.wall, 'Z')
		var err error
		if wall, err = datetime.Parse(p.wall); err != nil {
			return time.Time{}, errors.New(strings.Replace(err.Error(), string(p.wall), string(cell), 1))
		}
		p.minute.keep(cell, wall)
	}
	if p.opts.Loc == time.UTC {
		return wall, nil
	}
	t, err := p.zone.resolve(wall, p.opts.Loc, p.opts.DST)
	// A wall time within the years RFC 3339 writes can be an instant
	// outside them once its zone's offset is taken away.
	if err == nil && (t.Before(store.MinTime) || t.After(store.MaxTime)) {
		return time.Time{}, fmt.Errorf("%s in %s is outside 0001-01-01 to 9999-12-31 in UTC", cell, p.opts.Loc)
	}
	return t, err
}

// minuteCache keeps the minute of the last local time parsed, written
// without a fraction, as a logger writes a line every few seconds: the
// lines of that minute differ from it in their seconds alone, which it
// adds without parsing the rest again.
type minuteCache struct {
	prefix [len("2006-01-02 15:04:")]byte
	start  time.Time // zero: no minute kept
}

const secondsAt = len("2006-01-02 15:04:")

// keep keeps the minute of cell, a local time parsed as wall.
func (m *minuteCache) keep(cell []byte, wall time.Time) {
	if len(cell) != secondsAt+2 {
		return
	}
	copy(m.prefix[:], cell)
	m.start = wall.Add(-time.Duration(wall.Second()) * time.Second)
}

// second is cell's wall time, if cell is a second of the minute kept: the
// same minute, written the same way, and seconds 00 to 59.
func (m *minuteCache) second(cell []byte) (time.Time, bool) {
	if len(cell) != secondsAt+2 || m.start.IsZero() || string(cell[:secondsAt]) != string(m.prefix[:]) {
		return time.Time{}, false
	}
	tens, ones := cell[secondsAt]-'0', cell[secondsAt+1]-'0'
	if tens > 5 || ones > 9 {
		return time.Time{}, false
	}
	return m.start.Add(time.Duration(tens*10+ones) * time.Second), true
}

// hasZone tells whether a datetime ends in Z or ±hh:mm.
func hasZone(s []byte) bool {
	n := len(s)
	return s[n-1] == 'Z' || s[n-1] == 'z' || (n >= 25 && (s[n-6] == '+' || s[n-6] == '-') && s[n-3] == ':')
}

// zoneCache keeps the offset of the last local time resolved, and the
// instants over which it holds with no transition within a day, so that
// the lines of a file, mostly far from any transition, skip the search.
type zoneCache struct {
	offset   time.Duration
	from, to time.Time
}

// resolve finds the instant a local wall time (given as if in UTC) stands
// for in loc: in the spring gap there is none, and it is an error; in the
// autumn fold there are two, and dst picks one, or it is an error.
func (z *zoneCache) resolve(wall time.Time, loc *time.Location, dst string) (time.Time, error) {
	if t := wall.Add(-z.offset); !z.to.IsZero() && !t.Before(z.from) && t.Before(z.to) {
		return t, nil
	}
	// Offsets a day either side cover any transition near wall.
	var found []time.Time
	for _, near := range []time.Time{wall.Add(-24 * time.Hour), wall.Add(24 * time.Hour)} {
		_, seconds := near.In(loc).Zone()
		t := wall.Add(-time.Duration(seconds) * time.Second)
		if _, got := t.In(loc).Zone(); got == seconds && !slices.ContainsFunc(found, t.Equal) {
			found = append(found, t)
		}
	}
	local := wall.Format("2006-01-02 15:04:05.999999")
	switch {
	case len(found) == 0:
		return time.Time{}, fmt.Errorf("%s does not exist in %s: the clocks skip it for summer time; a logger on standard time all year needs a fixed zone, such as tz=Etc/GMT-1 for UTC+1", local, loc)
	case len(found) == 2 && dst == "":
		return time.Time{}, fmt.Errorf("%s happens twice in %s, in summer time and in standard time; say which with dst=earlier or dst=later", local, loc)
	case len(found) == 2:
		slices.SortFunc(found, time.Time.Compare)
		if dst == "later" {
			return found[1], nil
		}
		return found[0], nil
	}
	t := found[0]
	start, end := t.In(loc).ZoneBounds()
	_, seconds := t.In(loc).Zone()
	z.offset = time.Duration(seconds) * time.Second
	z.from, z.to = store.MinTime, store.MaxTime
	if !start.IsZero() {
		z.from = start.Add(24 * time.Hour)
	}
	if !end.IsZero() {
		z.to = end.Add(-24 * time.Hour)
	}
	return t, nil
}

// lineOf is the line the last record read starts on.
func (p *Reader) lineOf() int { return p.lines.recordLine() }

// stringsOf is a header's cells as strings, kept.
func stringsOf(cells [][]byte) []string {
	names := make([]string, len(cells))
	for i, cell := range cells {
		names[i] = string(cell)
	}
	return names
}

// errorAt is a file's Invalid error at a line and, unless column is -1, a
// column.
func (p *Reader) errorAt(line, column int, format string, args ...any) error {
	where := fmt.Sprintf("line %d", line)
	details := map[string]any{"line": line}
	if column >= 0 {
		name := strconv.Itoa(column + 1)
		if column < len(p.names) {
			name = p.names[column]
		}
		where += fmt.Sprintf(", column %s", name)
		details["column"] = name
	}
	return &apperr.Error{Code: apperr.Invalid, Message: where + ": " + fmt.Sprintf(format, args...), Details: details}
}

// readError explains why the file could not be read on.
func (p *Reader) readError(err error) error {
	if e, ok := errors.AsType[*apperr.Error](err); ok {
		return e // the body's reader said why: too large, say
	}
	if parse, ok := errors.AsType[*csv.ParseError](err); ok {
		return &apperr.Error{Code: apperr.Invalid, Details: map[string]any{"line": parse.Line},
			Message: fmt.Sprintf("line %d, character %d: %v", parse.Line, parse.Column, parse.Err)}
	}
	if errors.Is(err, io.EOF) {
		return apperr.Errorf(apperr.Invalid, "the file ends within its header")
	}
	return apperr.Wrap(apperr.Invalid, err, "the body could not be read")
}

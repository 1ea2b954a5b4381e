package fileimport

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strconv"
)

// lineReader splits a file into records of cells, as encoding/csv does
// (FieldsPerRecord -1, no lazy quotes, no comments), and splits the lines
// loggers write itself: cells unquoted, or quoted without a quote or a line
// break inside, each line ending in \n or \r\n. Those it slices out of its
// buffer, with no copy and no string; csv would copy each line into a
// string and its cells once more, which with a number parse per cell made
// most of a file's CPU in the service. At the first line of any other
// form (an escaped or a stray quote, a line break in a quoted cell, a
// line over the buffer or without a newline at the end, a read error) it
// hands that line and the rest of the file to csv, which reads on from
// there: whatever csv accepts, refuses or reads is unchanged, error
// messages included, with the line numbers counted from the file's start.
type lineReader struct {
	br    *bufio.Reader
	line  int      // lines read by the split, empty ones included
	start int      // the line the last record starts on, while split
	cells [][]byte // of the last record, into br's buffer or text

	csv  *csv.Reader // from the first line split does not take; nil before
	base int         // lines read before csv took over
	text []byte      // csv's last record's cells, one after the other
}

// lineBuffer is the longest line the split takes: CR1000X lines of a few
// hundred inputs, and csv beyond.
const lineBuffer = 64 << 10

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, lineBuffer)}
}

// read returns the next record's cells, valid until the following call,
// or csv's error (io.EOF at the end).
func (l *lineReader) read() ([][]byte, error) {
	for l.csv == nil {
		raw, err := l.br.ReadSlice('\n')
		if err != nil || !l.split(raw) {
			l.handOver(raw, err)
			break
		}
		if len(l.cells) > 0 {
			return l.cells, nil
		}
	}
	record, err := l.csv.Read()
	if err != nil {
		if parse, ok := errors.AsType[*csv.ParseError](err); ok {
			shifted := *parse
			shifted.StartLine += l.base
			shifted.Line += l.base
			err = &shifted
		}
		return nil, err
	}
	l.text, l.cells = l.text[:0], l.cells[:0]
	for _, cell := range record {
		l.text = append(l.text, cell...)
	}
	at := 0
	for _, cell := range record {
		l.cells = append(l.cells, l.text[at:at+len(cell):at+len(cell)])
		at += len(cell)
	}
	return l.cells, nil
}

// split splits raw, a line with its \n, into l.cells, none for an empty
// line, which csv skips; it reports false for a line it leaves to csv,
// and then counts it not.
func (l *lineReader) split(raw []byte) bool {
	b := raw[:len(raw)-1]
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	l.cells = l.cells[:0]
	if bytes.IndexByte(b, '\r') >= 0 {
		return false
	}
	if len(b) == 0 {
		l.line++
		return true
	}
	for {
		var cell []byte
		if len(b) > 0 && b[0] == '"' {
			end := bytes.IndexByte(b[1:], '"') + 1
			if end == 0 || (end+1 < len(b) && b[end+1] != ',') {
				return false
			}
			cell, b = b[1:end], b[end+1:]
		} else {
			end := bytes.IndexByte(b, ',')
			if end < 0 {
				end = len(b)
			}
			if cell, b = b[:end], b[end:]; bytes.IndexByte(cell, '"') >= 0 {
				return false
			}
		}
		l.cells = append(l.cells, cell)
		if len(b) == 0 {
			l.line++
			l.start = l.line
			return true
		}
		b = b[1:] // the comma
	}
}

// handOver gives csv the line raw and what follows it: br's, and a read
// error where there was one other than the buffer's end.
func (l *lineReader) handOver(raw []byte, err error) {
	rest := io.Reader(l.br)
	if err != nil && err != bufio.ErrBufferFull {
		rest = errReader{err}
	}
	l.base = l.line
	l.csv = csv.NewReader(io.MultiReader(bytes.NewReader(bytes.Clone(raw)), rest))
	l.csv.FieldsPerRecord = -1 // TOA5's first line is shorter than the others
	l.csv.ReuseRecord = true
}

// errReader returns its error, as the file's reader did.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// recordLine is the line the last record read starts on.
func (l *lineReader) recordLine() int {
	if l.csv == nil {
		return l.start
	}
	line, _ := l.csv.FieldPos(0)
	return l.base + line
}

// parseNumber is strconv.ParseFloat(string(cell), 64), bit for bit, for
// the numbers loggers write, -?[0-9]+(\.[0-9]+)? of at most 19 digits
// whose digits, as an integer, are below 2^53 and whose fraction has at
// most 22: their digits and 10^fraction are exact float64s, so that one
// division rounds once, correctly (Clinger's fast path, strconv's own
// first case). Any other cell, zero included, goes to strconv.
func parseNumber(cell []byte) (float64, error) {
	i := 0
	neg := len(cell) > 0 && cell[0] == '-'
	if neg {
		i++
	}
	var man uint64
	digits, point, fraction := 0, false, 0
	for ; i < len(cell); i++ {
		c := cell[i]
		switch {
		case c >= '0' && c <= '9':
			man = man*10 + uint64(c-'0')
			digits++
			if point {
				fraction++
			}
		case c == '.' && !point && digits > 0:
			point = true
		default:
			digits = 0 // not of this form
			i = len(cell)
		}
	}
	if digits == 0 || digits > 19 || man == 0 || man >= 1<<53 || fraction > 22 || (point && fraction == 0) {
		return strconv.ParseFloat(string(cell), 64)
	}
	f := float64(man) / exactPow10[fraction]
	if neg {
		f = -f // rounding to nearest is symmetric
	}
	return f, nil
}

var exactPow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

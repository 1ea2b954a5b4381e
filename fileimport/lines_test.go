package fileimport

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

var lineSeeds = []string{
	"a,b\n\"c\",\"d\"\n",
	"\"TOA5\",\"x\"\r\n\"TIMESTAMP\",\"RECORD\",\"1\"\r\n\r\n\"2024-05-01 00:00:00\",0,1.5\r\n",
	"a,\"b\"\"c\",d\n", "a,b\"c\n", "\"a\"b,c\n", "\"a\nb\",c\nd\n", "a,b", "a,\"b\"", "a\rb,c\n",
	"a,b\r", "\n\n\r\n", ",,\n\"\",\n", "\uFEFF\"TOA5\"\n", "a,\"b\n", "x,y\n1,2\n\"3\",\"4\"\"\"\n5,6\n",
	strings.Repeat("1,", 40000) + "2\n3,4\n",
}

// FuzzLineReader is an equivalence test: lineReader must read any file as
// encoding/csv does, record by record, with the same line numbers and the
// same errors, whether it splits the lines itself or hands them to csv.
func FuzzLineReader(f *testing.F) {
	for _, seed := range append(lineSeeds, fileSeeds...) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		want := csv.NewReader(strings.NewReader(body))
		want.FieldsPerRecord = -1
		got := newLineReader(iotest.HalfReader(strings.NewReader(body)))
		for i := 0; ; i++ {
			wantRecord, wantErr := want.Read()
			gotCells, gotErr := got.read()
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("record %d: error %v, want %v", i, gotErr, wantErr)
			}
			if wantErr != nil {
				return
			}
			if gotRecord := stringsOf(gotCells); !slices.Equal(gotRecord, wantRecord) {
				t.Fatalf("record %d: %q, want %q", i, gotRecord, wantRecord)
			}
			if line, _ := want.FieldPos(0); got.recordLine() != line {
				t.Fatalf("record %d: on line %d, want %d", i, got.recordLine(), line)
			}
		}
	})
}

// TestLineReaderReadError checks that a read error met within a line
// reaches the caller as csv would pass it on.
func TestLineReaderReadError(t *testing.T) {
	tooLarge := errors.New("too large")
	body := "a,b\n1,2\n3,"
	want := csv.NewReader(io.MultiReader(strings.NewReader(body), errReader{tooLarge}))
	want.FieldsPerRecord = -1
	got := newLineReader(io.MultiReader(strings.NewReader(body), errReader{tooLarge}))
	for i := range 3 {
		wantRecord, wantErr := want.Read()
		gotCells, gotErr := got.read()
		if gotErr != wantErr || !slices.Equal(stringsOf(gotCells), wantRecord) && wantErr == nil {
			t.Fatalf("record %d: %q, %v, want %q, %v", i, stringsOf(gotCells), gotErr, wantRecord, wantErr)
		}
	}
}

var numberSeeds = []string{
	"0", "-0", "1", "-1", "1.5", "2800.1234", "-999.9999", "007.50", "1.", ".5", "+1", "1e3", "1E-3",
	"0x1p3", "1_0", "Inf", "-inf", "NaN", "9007199254740993", "9007199254740992", "123456789012345678901",
	"0.0000000000000000000001", "0.00000000000000000000001", "1.2.3", "-", "", "12a", "4503599627370497.5",
}

// FuzzParseNumber is an equivalence test: parseNumber must give what
// strconv.ParseFloat gives, bit for bit, and fail where it fails.
func FuzzParseNumber(f *testing.F) {
	for _, seed := range numberSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cell string) {
		checkNumber(t, cell)
	})
}

// TestParseNumberRandom is an equivalence test over the numbers loggers
// write, with 0 to 19 digits after the point, against strconv.ParseFloat.
func TestParseNumberRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200_000 {
		v := (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(12)))
		checkNumber(t, strconv.FormatFloat(v, 'f', rng.IntN(20), 64))
	}
}

func checkNumber(t *testing.T, cell string) {
	t.Helper()
	want, wantErr := strconv.ParseFloat(cell, 64)
	got, gotErr := parseNumber([]byte(cell))
	if math.Float64bits(got) != math.Float64bits(want) || (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("parseNumber(%q) = %v, %v, want %v, %v", cell, got, gotErr, want, wantErr)
	}
}

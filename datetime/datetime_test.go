package datetime

import (
	"strings"
	"testing"
	"time"
)

var parseTests = []struct {
	in      string
	want    string // RFC 3339 in UTC, to the nanosecond
	wantErr string // part of the error
}{
	{in: "2024-05-01T12:00:00Z", want: "2024-05-01T12:00:00Z"},
	{in: "2024-05-01T12:00:00.1Z", want: "2024-05-01T12:00:00.1Z"},
	{in: "2024-05-01T12:00:00.123456Z", want: "2024-05-01T12:00:00.123456Z"},
	{in: "2024-05-01T14:00:00+02:00", want: "2024-05-01T12:00:00Z"},
	{in: "2024-05-01T00:30:00-01:45", want: "2024-05-01T02:15:00Z"},
	{in: "2024-05-01T12:00:00-00:00", want: "2024-05-01T12:00:00Z"},
	{in: "2024-02-29T00:00:00Z", want: "2024-02-29T00:00:00Z"},
	{in: "0001-01-01T00:00:00Z", want: "0001-01-01T00:00:00Z"},
	{in: "9999-12-31T23:59:59.999999Z", want: "9999-12-31T23:59:59.999999Z"},
	{in: "2024-05-01T12:00:00", wantErr: "no zone"},
	{in: "2024-05-01T12:00:00.123", wantErr: "no zone"},
	{in: "2024-05-01T12:00:00.1234567Z", wantErr: "7 fractional digits"},
	{in: "2024-05-01T12:00:00.Z", wantErr: "without digits"},
	{in: "2024-05-01 12:00:00Z", wantErr: "not RFC 3339"},
	{in: "2024-05-01t12:00:00z", wantErr: "not RFC 3339"},
	{in: "2024-05-01", wantErr: "not RFC 3339"},
	{in: "", wantErr: "not RFC 3339"},
	{in: "yesterday", wantErr: "not RFC 3339"},
	{in: "+2024-05-01T12:00:00Z", wantErr: "not RFC 3339"},
	{in: "0000-01-01T00:00:00Z", wantErr: "year"},
	{in: "0001-01-01T00:30:00+01:00", wantErr: "outside"},
	{in: "9999-12-31T23:30:00-01:00", wantErr: "outside"},
	{in: "2024-13-01T00:00:00Z", wantErr: "month"},
	{in: "2024-00-01T00:00:00Z", wantErr: "month"},
	{in: "2023-02-29T00:00:00Z", wantErr: "no day 29"},
	{in: "2024-04-31T00:00:00Z", wantErr: "no day 31"},
	{in: "2024-05-00T00:00:00Z", wantErr: "no day 0"},
	{in: "2024-05-01T24:00:00Z", wantErr: "hour"},
	{in: "2024-05-01T12:60:00Z", wantErr: "minute"},
	{in: "2016-12-31T23:59:60Z", wantErr: "leap seconds"},
	{in: "2024-05-01T12:00:61Z", wantErr: "second"},
	{in: "2024-05-01T12:00:00+24:00", wantErr: "zone"},
	{in: "2024-05-01T12:00:00+02", wantErr: "zone"},
	{in: "2024-05-01T12:00:00+0200", wantErr: "zone"},
	{in: "2024-05-01T12:00:00 Z", wantErr: "zone"},
	{in: "2024-05-01T12:00:00ZZ", wantErr: "zone"},
	{in: "2024-05-01T1２:00:00Z", wantErr: "not RFC 3339"},
}

func TestParseDatetime(t *testing.T) {
	for _, tt := range parseTests {
		got, err := Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) = %v, %v; want an error saying %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Format(time.RFC3339Nano) != tt.want || got.Location() != time.UTC {
			t.Errorf("Parse(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseDatetime checks that whatever Parse accepts, the standard
// library reads as the same instant, to the microsecond, and that it never
// panics.
func FuzzParseDatetime(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		if err != nil {
			return
		}
		want, stdErr := time.Parse(time.RFC3339Nano, s)
		if stdErr != nil {
			t.Fatalf("Parse(%q) = %v, but time.Parse refuses it: %v", s, got, stdErr)
		}
		if !got.Equal(want) || got.Nanosecond()%1000 != 0 {
			t.Fatalf("Parse(%q) = %v, time.Parse = %v", s, got, want)
		}
	})
}

func TestAppendDatetime(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"2024-05-01T12:00:00Z", "2024-05-01T12:00:00.000Z"},
		{"2024-05-01T14:00:00.123456+02:00", "2024-05-01T12:00:00.123Z"},
		{"2024-05-01T12:00:00.999999Z", "2024-05-01T12:00:00.999Z"},
		{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"},
		{"9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999Z"},
		{"0999-09-09T09:09:09.009Z", "0999-09-09T09:09:09.009Z"},
		{"2024-02-29T23:59:59.5-01:00", "2024-03-01T00:59:59.500Z"},
		{"0000-01-01T00:00:00Z", "0000-01-01T00:00:00.000Z"},
	} {
		in, err := time.Parse(time.RFC3339Nano, tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(Append(nil, in)); got != tt.want {
			t.Errorf("Append(%s) = %s, want %s", tt.in, got, tt.want)
		}
		var a Appender
		if got := string(a.Append(nil, in)); got != tt.want {
			t.Errorf("Appender.Append(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestAppender writes instants in turn with one Appender, each as Append
// does: the same day, across midnight, back, and before 1970, where a day
// starts at a negative second.
func TestAppender(t *testing.T) {
	var a Appender
	at := func(s string) time.Time {
		in, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	for _, in := range []time.Time{
		at("2024-05-01T12:00:00Z"), at("2024-05-01T23:59:59.999Z"), at("2024-05-02T00:00:00Z"), at("2024-05-01T00:00:00.001Z"),
		at("1969-12-31T23:59:59.999Z"), at("1969-12-31T00:00:00Z"), at("1970-01-01T00:00:00Z"), at("1969-12-30T23:59:59Z"),
		at("0000-01-01T00:00:00Z"), time.Date(-1, 12, 31, 23, 0, 0, 0, time.UTC), at("0000-01-01T01:00:00Z"),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), at("9999-12-31T23:59:59.999Z"),
		at("2024-05-01T14:00:00.123456+02:00"), at("2024-05-01T12:00:00.999999Z"),
	} {
		if got, want := string(a.Append(nil, in)), string(Append(nil, in)); got != want {
			t.Errorf("Appender.Append(%s) = %s, want %s", in, got, want)
		}
	}
}

// FuzzAppendDatetime holds the hand-written formatting to time's own over
// every instant a reading can have.
func FuzzAppendDatetime(f *testing.F) {
	f.Add(int64(0))
	f.Add(Min.UnixMicro())
	f.Add(Max.UnixMicro())
	f.Add(int64(1714564800123456))
	// From year 0, where an aggregate's first bucket may start, to 9999.
	yearZero := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	first, span := yearZero.UnixMicro(), Max.UnixMicro()-yearZero.UnixMicro()+1
	f.Fuzz(func(t *testing.T, micros int64) {
		// Every input counts: fold it into the instants a reading can have.
		micros = first + (micros%span+span)%span
		in := time.UnixMicro(micros)
		want := in.UTC().Format("2006-01-02T15:04:05.000Z")
		if got := string(Append(nil, in)); got != want {
			t.Fatalf("Append(%d µs) = %s, want %s", micros, got, want)
		}
		// An Appender that wrote the instant a day and a second before,
		// or the same day's midnight, or nothing.
		for _, before := range []time.Duration{0, -24*time.Hour - time.Second, -time.Duration(in.UTC().Hour()) * time.Hour} {
			var a Appender
			if before != 0 {
				a.Append(nil, in.Add(before))
			}
			if got := string(a.Append(nil, in)); got != want {
				t.Fatalf("Appender.Append(%d µs) after %v = %s, want %s", micros, before, got, want)
			}
		}
	})
}

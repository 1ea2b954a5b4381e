// Package datetime reads and writes the datetimes of the API: RFC 3339 with
// a zone, stored to the microsecond, answered to the millisecond. It is
// apart so that the server, the JSON batch decoder and the file parser read
// a datetime the same way.
package datetime

import (
	"fmt"
	"time"
)

// The instants a reading can have: RFC 3339's four-digit years.
var (
	Min = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	Max = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

// Parse parses an RFC 3339 datetime as readings take it: a zone is
// required (Z or ±hh:mm, converted to UTC) and at most six fractional digits
// are allowed, because readings are stored to the microsecond and two
// readings at one microsecond are one reading. time.Parse accepts nine
// digits and rounds silently, so it is not used. The error says what to fix.
func Parse[T string | []byte](s T) (time.Time, error) {
	// 2006-01-02T15:04:05[.ffffff](Z|±07:00)
	const minLen = len("2006-01-02T15:04:05")
	if len(s) < minLen || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, fmt.Errorf("datetime %q is not RFC 3339, such as 2024-05-01T12:00:00Z", s)
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	second, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return time.Time{}, fmt.Errorf("datetime %q is not RFC 3339, such as 2024-05-01T12:00:00Z", s)
	}
	rest := s[19:]
	nanos := 0
	if len(rest) > 0 && rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		fraction := rest[1:n]
		switch {
		case len(fraction) == 0:
			return time.Time{}, fmt.Errorf("datetime %q has a decimal point without digits", s)
		case len(fraction) > 6:
			return time.Time{}, fmt.Errorf("datetime %q has %d fractional digits; at most 6 (microseconds) are kept", s, len(fraction))
		}
		f, _ := digits(fraction)
		for range 9 - len(fraction) {
			f *= 10
		}
		nanos = f
		rest = rest[n:]
	}
	offset, err := parseZone(rest)
	if err != nil {
		return time.Time{}, fmt.Errorf("datetime %q %v", s, err)
	}
	switch {
	case year < 1:
		return time.Time{}, fmt.Errorf("datetime %q: the year must be from 0001 to 9999", s)
	case month < 1 || month > 12:
		return time.Time{}, fmt.Errorf("datetime %q: the month must be from 01 to 12", s)
	case hour > 23:
		return time.Time{}, fmt.Errorf("datetime %q: the hour must be from 00 to 23", s)
	case minute > 59:
		return time.Time{}, fmt.Errorf("datetime %q: the minute must be from 00 to 59", s)
	case second == 60:
		return time.Time{}, fmt.Errorf("datetime %q: leap seconds cannot be stored; use :59.999999 or the next second", s)
	case second > 59:
		return time.Time{}, fmt.Errorf("datetime %q: the second must be from 00 to 59", s)
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, nanos, time.UTC)
	if t.Day() != day {
		return time.Time{}, fmt.Errorf("datetime %q: %s has no day %d", s, time.Month(month), day)
	}
	t = t.Add(-offset)
	if t.Before(Min) || t.After(Max) {
		return time.Time{}, fmt.Errorf("datetime %q is outside 0001-01-01 to 9999-12-31 in UTC", s)
	}
	return t, nil
}

// parseZone parses Z or ±hh:mm.
func parseZone[T string | []byte](z T) (time.Duration, error) {
	switch {
	case string(z) == "Z":
		return 0, nil
	case len(z) == 0:
		return 0, fmt.Errorf("has no zone; add Z or an offset such as +02:00")
	case len(z) != 6 || (z[0] != '+' && z[0] != '-') || z[3] != ':':
		return 0, fmt.Errorf("has a zone %q that is neither Z nor an offset such as +02:00", z)
	}
	hours, ok1 := digits(z[1:3])
	minutes, ok2 := digits(z[4:6])
	if !ok1 || !ok2 || hours > 23 || minutes > 59 {
		return 0, fmt.Errorf("has a zone %q that is neither Z nor an offset such as +02:00", z)
	}
	offset := time.Duration(hours)*time.Hour + time.Duration(minutes)*time.Minute
	if z[0] == '-' {
		offset = -offset
	}
	return offset, nil
}

// digits parses s, all ASCII digits, as a decimal number.
func digits[T string | []byte](s T) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(s) > 0
}

// Append appends t as responses carry it, UTC to the millisecond:
// 2024-05-01T12:00:00.123Z. It writes the digits itself because a page
// formats a thousand of these, and time.AppendFormat interprets its layout
// on every call (BenchmarkEncodePage/JSON measures the page). It writes
// years 0 to 9999 (an aggregate's
// bucket may start in year 0); FuzzAppendDatetime holds it to time's own
// formatting. Others, which no reading has, go to time's own.
func Append(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, "2006-01-02T15:04:05.000Z")
	}
	hour, minute, second := t.Clock()
	b = appendPadded(b, year, 4)
	b = append(b, '-')
	b = appendPadded(b, int(month), 2)
	b = append(b, '-')
	b = appendPadded(b, day, 2)
	b = append(b, 'T')
	b = appendPadded(b, hour, 2)
	b = append(b, ':')
	b = appendPadded(b, minute, 2)
	b = append(b, ':')
	b = appendPadded(b, second, 2)
	b = append(b, '.')
	b = appendPadded(b, t.Nanosecond()/int(time.Millisecond), 3)
	return append(b, 'Z')
}

// Appender appends datetimes as Append does, keeping the date of the
// last it wrote: the readings of a page mostly share their day, and
// splitting an instant into its date is most of Append's work. Its zero
// value is ready.
type Appender struct {
	day  int64    // days since 1970-01-01 of date, when ok
	date [11]byte // 2024-05-01T
	ok   bool
}

// Append appends t as Append does.
func (a *Appender) Append(b []byte, t time.Time) []byte {
	sec := t.Unix()
	day := sec / secondsPerDay
	if sec%secondsPerDay < 0 {
		day--
	}
	if !a.ok || day != a.day {
		year, _, _ := t.UTC().Date()
		if year < 0 || year > 9999 {
			return Append(b, t)
		}
		Append(a.date[:0], t)
		a.day, a.ok = day, true
	}
	s := int(sec - day*secondsPerDay)
	h, m, ms := s/3600, s/60%60, t.Nanosecond()/int(time.Millisecond)
	s %= 60
	b = append(b, a.date[:]...)
	return append(b, byte('0'+h/10), byte('0'+h%10), ':', byte('0'+m/10), byte('0'+m%10), ':', byte('0'+s/10), byte('0'+s%10),
		'.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

const secondsPerDay = 24 * 60 * 60

// appendPadded appends n, 0 <= n < 10^width, in width digits.
func appendPadded(b []byte, n, width int) []byte {
	b = append(b, "0000"[:width]...)
	for i := len(b) - 1; n > 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}

// FormatExact formats t to the microsecond, for query strings the service
// builds itself (the next page's bound must be exact).
func FormatExact(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

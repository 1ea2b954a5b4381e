// Package jsonnum writes float64s as JSON numbers, byte for byte as
// encoding/json writes them (the ES6 shortest form: the fewest digits
// that read back as the same float64, exponents only below 1e-6 and from
// 1e21), at about twice the speed of strconv.AppendFloat: a page of
// readings is mostly numbers, and formatting them was half the service's
// CPU per page (BenchmarkAppend).
package jsonnum

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Append appends f as encoding/json writes a float64. NaN and the
// infinities, which JSON cannot hold, are written as strconv writes them;
// callers keep them out.
func Append(b []byte, f float64) []byte {
	bits := math.Float64bits(f)
	biased := int(bits>>52) & 0x7FF
	if biased == 0 || biased == 0x7FF {
		if bits<<1 == 0 {
			// Zero, a common output (an alarm's state, say).
			if bits>>63 != 0 {
				return append(b, "-0"...)
			}
			return append(b, '0')
		}
		// Subnormals (all below 1e-6), NaN and the infinities: rare
		// enough for strconv.
		return appendStrconv(b, f)
	}
	mant := bits&(1<<52-1) | 1<<52
	// A whole number from 1 to 2^53, as an alarm's state or a count, is
	// its own shortest form: its integer's digits, with no search for them.
	if e := uint(1075 - biased); e <= 52 && mant&(1<<e-1) == 0 {
		if bits>>63 != 0 {
			b = append(b, '-')
		}
		var buf [20]byte
		return append(b, buf[formatBase10(&buf, mant>>e):]...)
	}
	digits, exp := shortest(mant, biased-1075)
	if bits>>63 != 0 {
		b = append(b, '-')
	}
	// f = ±digits × 10^exp, digits of nd decimal digits; the decimal point
	// sits dp digits from the left of them.
	var buf [20]byte
	i := formatBase10(&buf, digits)
	s := buf[i:]
	nd := len(s)
	dp := nd + exp
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		b = append(b, s[0])
		if nd > 1 {
			b = append(b, '.')
			b = append(b, s[1:]...)
		}
		b = append(b, 'e')
		e := dp - 1
		if e < 0 {
			b = append(b, '-')
			e = -e
		} else {
			b = append(b, '+')
		}
		return strconv.AppendInt(b, int64(e), 10)
	}
	switch {
	case dp <= 0:
		b = append(b, "0."...)
		b = append(b, "000000"[:-dp]...) // dp >= -6 here, since f >= 1e-6
		return append(b, s...)
	case dp >= nd:
		b = append(b, s...)
		return append(b, "000000000000000000000"[:dp-nd]...) // dp <= 21, since f < 1e21
	default:
		b = append(b, s[:dp]...)
		b = append(b, '.')
		return append(b, s[dp:]...)
	}
}

// AppendInt appends i in decimal, as strconv.AppendInt(b, i, 10) does,
// eight digits at a time: a reading's id holds its instant in
// microseconds, sixteen digits.
func AppendInt(b []byte, i int64) []byte {
	u := uint64(i)
	if i < 0 {
		b = append(b, '-')
		u = -u
	}
	var buf [20]byte
	return append(b, buf[formatBase10(&buf, u):]...)
}

// appendStrconv is Append by strconv, as the service wrote numbers before.
func appendStrconv(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// smalls is the formatting of 00..99 concatenated.
const smalls = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// formatBase10 writes u's decimal digits at the end of a and returns the
// index of the first; u < 10^20. Eight digits at a time in one register,
// then two at a time from smalls.
func formatBase10(a *[20]byte, u uint64) int {
	i := len(a)
	for u >= 1e8 {
		i -= 8
		binary.LittleEndian.PutUint64(a[i:], eightDigits(uint32(u%1e8)))
		u /= 1e8
	}
	lo := uint32(u)
	for lo >= 100 {
		dd := (lo % 100) * 2
		lo /= 100
		i -= 2
		a[i], a[i+1] = smalls[dd], smalls[dd+1]
	}
	dd := lo * 2
	i--
	a[i] = smalls[dd+1]
	if lo >= 10 {
		i--
		a[i] = smalls[dd]
	}
	return i
}

// eightDigits is x < 10^8 as eight ASCII digits, the first in the low
// byte: the halves of x in 32-bit lanes, their halves in 16-bit lanes,
// their digits in bytes, each split by a multiplication that divides
// exactly in its range (x·10486>>20 = x/100 below 43,699; x·103>>10 =
// x/10 below 179).
func eightDigits(x uint32) uint64 {
	v := uint64(x/10000) | uint64(x%10000)<<32
	h := (v * 10486 >> 20) & 0x0000007F0000007F
	v = h | (v-h*100)<<16
	h = (v * 103 >> 10) & 0x000F000F000F000F
	v = h | (v-h*10)<<8
	return v + 0x3030303030303030
}

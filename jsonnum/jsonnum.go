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
	"math/bits"
	"strconv"
)

// Append appends f as encoding/json writes a float64. NaN and the
// infinities, which JSON cannot hold, are written as strconv writes them;
// callers keep them out.
func Append(b []byte, f float64) []byte {
	bits := math.Float64bits(f)
	biased := int(bits>>52) & 0x7FF
	mant := bits&(1<<52-1) | 1<<52
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
	if bits>>63 != 0 {
		b = append(b, '-')
	}
	// A whole number from 1 to 2^53, as an alarm's state or a count, is
	// its own shortest form: its integer's digits, with no search for them.
	if e := uint(1075 - biased); e <= 52 && mant&(1<<e-1) == 0 {
		var buf [20]byte
		return append(b, buf[formatBase10(&buf, mant>>e):]...)
	}
	head, last, exp, ok := fastShortest(mant, biased-1075)
	if !ok || mant == 1<<52 {
		digits, dexp := shortest(mant, biased-1075)
		head, last, exp = digits/10, digits%10, dexp
	}
	// f = ±(10·head + last) × 10^exp; its digits, trailing zeros cut,
	// are a[i:j], the decimal point dp digits from the left of them.
	var a [80]byte
	i, j := sigDigits(&a, head, last)
	nd := j - i
	dp := nd + exp + (18 - j)
	if dp <= 0 || dp >= nd {
		return appendPlaced(b, &a, i, j, dp)
	}
	// The common case, the point inside the digits (dp <= 16): the
	// digits in three words, then those after the point again one byte
	// on, in two words, and the point between. Fixed-size loads and
	// stores rather than copies of a variable length; the masks, no-ops
	// (i <= 17), tell the compiler the loads are in a.
	n := len(b)
	if cap(b)-n < 40 {
		b = append(b, make([]byte, 40)...)[:n]
	}
	out := (*[40]byte)(b[n : n+40])
	le := binary.LittleEndian
	le.PutUint64(out[0:], le.Uint64(a[i&31:]))
	le.PutUint64(out[8:], le.Uint64(a[(i+8)&31:]))
	le.PutUint64(out[16:], le.Uint64(a[(i+16)&63:]))
	le.PutUint64(out[(dp+1)&31:], le.Uint64(a[(i+dp)&63:]))
	le.PutUint64(out[(dp+9)&31:], le.Uint64(a[(i+dp+8)&63:]))
	out[dp&31] = '.'
	return b[:n+nd+1]
}

// appendPlaced appends the digits a[i:j] with the decimal point dp
// digits from their left, outside them: zeros before or after them, or
// an exponent.
func appendPlaced(b []byte, a *[80]byte, i, j, dp int) []byte {
	nd := j - i
	switch {
	case dp >= nd && dp <= 21:
		b = append(b, a[i:j]...)
		return append(b, "000000000000000000000"[:dp-nd]...)
	case dp <= 0 && dp > -6:
		b = append(b, "0.000000"[:2-dp]...)
		return append(b, a[i:j]...)
	}
	// Below 1e-6 (dp <= -6) or from 1e21 (dp >= 22): an exponent.
	b = append(b, a[i])
	if nd > 1 {
		a[i] = '.'
		b = append(b, a[i:j]...)
	}
	b = append(b, 'e')
	e := dp - 1
	if e < 0 {
		b = append(b, '-')
		e = -e
	} else {
		b = append(b, '+')
	}
	if e >= 100 {
		b = append(b, byte('0'+e/100))
		e %= 100
		return append(b, smalls[2*e], smalls[2*e+1])
	}
	if e >= 10 {
		return append(b, smalls[2*e], smalls[2*e+1])
	}
	return append(b, byte('0'+e))
}

// sigDigits writes the digits of 10·head + last, head < 10^16, last < 10,
// not both zero, at a[1:18], and returns where they start and where
// their trailing zeros do: head's in two words of eight, whose zero
// digits are counted by their bytes (ASCII zeros xor '0' are zero bytes)
// rather than by dividing, then last, which if not zero ends them.
func sigDigits(a *[80]byte, head, last uint64) (i, j int) {
	const zeros = 0x3030303030303030
	top := head / 1e8
	hi := eightDigits(uint32(top))
	// A reading of few digits (a sensor's 23.45) leaves the last eight
	// of head zeros: their word is known.
	lo := uint64(zeros)
	if r := head - top*1e8; r != 0 {
		lo = eightDigits(uint32(r))
	}
	binary.LittleEndian.PutUint64(a[1:], hi)
	binary.LittleEndian.PutUint64(a[9:], lo)
	a[17] = byte('0' + last)
	switch {
	case top != 0:
		i = 1 + bits.TrailingZeros64(hi^zeros)/8
	case head != 0:
		i = 9 + bits.TrailingZeros64(lo^zeros)/8
	default:
		i = 17
	}
	// The zero digits at the end: zero bytes at the top of a[10:18], or
	// else of a[2:10], counted in one register each; a[1] is the last
	// resort, not zero then. Whether last is zero is as random as the
	// digits: it is part of the first word, not a branch.
	if x := (lo^zeros)>>8 | last<<56; x != 0 {
		j = 18 - bits.LeadingZeros64(x)/8
	} else if y := (hi^zeros)>>8 | (lo^zeros)<<56; y != 0 {
		j = 10 - bits.LeadingZeros64(y)/8
	} else {
		j = 2
	}
	return i, j
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

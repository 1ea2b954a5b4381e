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
	"slices"
	"strconv"
)

// Append appends f as encoding/json writes a float64. NaN and the
// infinities, which JSON cannot hold, are written as strconv writes them;
// callers keep them out. It may write up to 25 bytes past the number in
// b's spare capacity.
func Append(b []byte, f float64) []byte {
	u := math.Float64bits(f)
	biased := int(u>>52) & 0x7FF
	if uint(biased-1) >= 0x7FE {
		return appendSpecial(b, f)
	}
	mant := u&(1<<52-1) | 1<<52
	exp := biased - 1075
	// The number is written in place, in the room reserved here once: a
	// sign always, counted only when the number is negative (a branch
	// there is as random as the signs of a page's values), then the
	// digits in three stores of eight bytes.
	n := len(b)
	if cap(b)-n < 25 {
		b = slices.Grow(b, 25)
	}
	b = b[:n+25]
	b[n] = '-'
	n += int(u >> 63)
	// A whole number from 1 to 2^53, as an alarm's state or a count, is
	// its own shortest form: its integer's digits, with no search for them.
	if e := uint(-exp); e <= 52 && mant&(1<<e-1) == 0 {
		if v := mant >> e; v < 1e8 {
			// Eight digits in one word, its leading zeros shifted out.
			w := eightDigits(uint32(v))
			z := uint(bits.TrailingZeros64(w^0x3030303030303030)) / 8
			binary.LittleEndian.PutUint64(b[n:n+8], w>>(8*z))
			return b[:n+8-int(z)]
		}
		var buf [20]byte
		return append(b[:n], buf[formatBase10(&buf, mant>>e):]...)
	}
	head, last, dexp, ok := fastShortest(mant, exp)
	if !ok || mant == 1<<52 {
		head, last, dexp = shortest17(mant, exp)
	}
	// f = ±(10·head + last) × 10^dexp, 16 or 17 digits: hi holds head's
	// first eight as ASCII, lo its next eight. A reading of few digits
	// (a sensor's 23.45) leaves lo zeros: its word is known.
	const zeros = 0x3030303030303030
	a, ab, abc := head/1e12, head/1e8, head/1e4
	hi := fourFours(ab<<32 - a*(1e4<<32-1))
	lo := uint64(zeros)
	if head != ab*1e8 {
		lo = fourFours(head<<32 + abc - (ab*1e4 + abc*(1e4<<32)))
	}
	// 16 digits (head < 10^15, a first '0') as 17 with a last zero, the
	// words moved one byte: the first digit is then always the first
	// byte, and dp below is where the point goes. By arithmetic, since
	// which holds is as random as the digits, and after the digits,
	// which it does not delay: s is 1 for 16 digits, else 0.
	s := (head - 1e15) >> 63
	hi = hi>>(8*s) | lo<<56&-s
	lo = lo>>(8*s) | ('0'+last)<<56&-s
	last &= s - 1
	dexp -= int(s)
	// nd, the digits without their trailing zeros, from the zero bytes
	// (ASCII zeros xor '0') at the top of digits 9 to 16 in one word, or
	// else of digits 1 to 8; digit 0 is not zero. Whether last is zero is
	// as random as the digits: it is part of the first word, not a branch.
	x := (lo^zeros)>>8 | last<<56
	z := uint(bits.LeadingZeros64(x))
	if x == 0 {
		z = 64 + uint(bits.LeadingZeros64((hi^zeros)>>8|(lo^zeros)<<56))
	}
	nd := 17 - int(z/8)
	// The decimal point goes dp digits from the left.
	dp := 17 + dexp
	if uint(dp-1) >= 7 || dp >= nd {
		return appendPlaced(b[:n], hi, lo, last, nd, dp)
	}
	// The common case, a point after the first to the seventh digit
	// (values from 1 to 10^7 with a fraction): the digits from dp on
	// move up one byte in the words, and the point takes their place.
	sh := uint(8*dp) & 63
	m := uint64(1)<<sh - 1 // the bytes before the point
	out := (*[24]byte)(b[n : n+24])
	le := binary.LittleEndian
	le.PutUint64(out[0:], hi&m|'.'<<sh|(hi&^m)<<8)
	le.PutUint64(out[8:], lo<<8|hi>>56)
	le.PutUint64(out[16:], ('0'+last)<<8|lo>>56)
	return b[:n+nd+1]
}

// shortest17 is Dragonbox's shortest digits of mant × 2^exp, for the
// significands fastShortest leaves, as Append's 17 digits: 10·head +
// last, from 10^16 to 10^17, × 10^dexp.
func shortest17(mant uint64, exp int) (head, last uint64, dexp int) {
	d, dexp := shortest(mant, exp)
	// Times 10^t, t from 0 to 16, t's bits from the top; each step
	// leaves d below 10^16 but the last.
	for _, s := range [...]struct {
		below, times uint64
		t            int
	}{{1e8, 1e8, 8}, {1e12, 1e4, 4}, {1e14, 100, 2}, {1e15, 10, 1}, {1e16, 10, 1}} {
		if d < s.below {
			d *= s.times
			dexp -= s.t
		}
	}
	return d / 10, d % 10, dexp
}

// appendPlaced appends the nd digits of hi, lo and last (Append's
// words) with the decimal point dp digits from their left: within them,
// zeros before or after them, or an exponent.
func appendPlaced(b []byte, hi, lo, last uint64, nd, dp int) []byte {
	var a [24]byte
	binary.LittleEndian.PutUint64(a[0:], hi)
	binary.LittleEndian.PutUint64(a[8:], lo)
	a[16] = byte('0' + last)
	d := a[:nd]
	switch {
	case dp > 0 && dp < nd:
		b = append(b, d[:dp]...)
		b = append(b, '.')
		return append(b, d[dp:]...)
	case dp >= nd && dp <= 21:
		b = append(b, d...)
		return append(b, "000000000000000000000"[:dp-nd]...)
	case dp <= 0 && dp > -6:
		b = append(b, "0.000000"[:2-dp]...)
		return append(b, d...)
	}
	// Below 1e-6 (dp <= -6) or from 1e21 (dp >= 22): an exponent.
	b = append(b, d[0])
	if nd > 1 {
		b = append(b, '.')
		b = append(b, d[1:]...)
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

// appendSpecial appends zero, a subnormal, NaN or an infinity.
func appendSpecial(b []byte, f float64) []byte {
	if f == 0 {
		// Zero, a common output (an alarm's state, say).
		if math.Signbit(f) {
			return append(b, "-0"...)
		}
		return append(b, '0')
	}
	// Subnormals (all below 1e-6), NaN and the infinities: rare enough
	// for strconv.
	return appendStrconv(b, f)
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

// AppendEight appends x < 10^8 as eight digits, leading zeros and all,
// in one word: the low half of a reading's id, whose high half its
// encoder keeps from the reading before.
func AppendEight(b []byte, x uint32) []byte {
	return binary.LittleEndian.AppendUint64(b, eightDigits(x))
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
	return fourFours(uint64(x/10000) | uint64(x%10000)<<32)
}

// fourFours writes the two numbers below 10^4 in v's low and high 32
// bits as eight ASCII digits, the low one's first: eightDigits' work once
// the halves are split, which Append splits itself, off the chain.
func fourFours(v uint64) uint64 {
	h := (v * 10486 >> 20) & 0x0000007F0000007F
	v = v<<16 - h*(100<<16-1)
	h = (v * 103 >> 10) & 0x000F000F000F000F
	return v<<8 + 0x3030303030303030 - h*(10<<8-1)
}

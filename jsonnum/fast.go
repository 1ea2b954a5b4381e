package jsonnum

import "math/bits"

// fastShortest returns the shortest digits of mant × 2^exp, a normal
// float64's significand (with its implicit bit, not a power of two) and
// exponent, as 10·head + last (16 or 17 digits, head < 10^16, last a
// digit) × 10^dexp, or ok false when one product cannot decide them;
// Dragonbox (shortest) decides those. The digits may end in zeros; when
// last is not zero, they do not.
//
// Written from the mathematics of Raffaello Giulietti's paper "The
// Schubfach way to render doubles" (2020), its choice of scale: with
// k = ⌊exp·log10(2)⌋, V = mant × 2^exp × 10^-k lies in [2^52, 10·2^53), so
// its integer part has 16 or 17 digits, and the half-width of the
// rounding interval, h = 2^(exp-1) × 10^-k, lies in [1/2, 5): the interval
// (V-h, V+h) holds at most one multiple of ten, which when there is one
// is the shortest (its digits end in a zero), and otherwise the integer
// nearest V, always inside it since h > 1/2.
//
// One product gives V/10 = mant × 2^exp × 10^-(k+1): its integer part
// q is head before any rounding up, with no division by ten, and its
// fraction F = (V mod 10)/10 decides, against h/10 in fixed point: a
// multiple of ten below V is inside when F < h/10, the one above when
// 1 - F < h/10, else the last digit is 10·F's integer part rounded by
// its fraction. The product's error is below 2^-63 of V/10, so a
// comparison closer than a few units of 2^-64 is left undecided, which
// takes in the exact ties and the bounds that fall exactly on a
// multiple of ten (whose inclusion depends on mant's parity): Dragonbox
// rules on those.
func fastShortest(mant uint64, exp int) (head, last uint64, dexp int, ok bool) {
	k := mulLog10_2(exp)
	// 10^-(k+1) = T × 2^(L-127), T the table's 128 bits (truncated, error
	// below one unit), L = ⌊log2(10^-(k+1))⌋; V/10 = (mant << s) × T /
	// 2^132: the product's top word holds it with four bits of fraction.
	t := pow10Tab[-k-1-pow10Min]
	s := uint(exp + mulLog2_10(-k-1) + 5) // 1 to 5 (TestFastShift)
	m := mant << s
	a1, a0 := bits.Mul64(m, t.Hi)
	b1, _ := bits.Mul64(m, t.Lo)
	mid, carry := bits.Add64(a0, b1, 0)
	top := a1 + carry // below 2^57, as V/10 < 2^53
	q := top >> 4     // below 10^16
	// In units of 2^-64: f is F, less than its value by below two units;
	// hw is h/10, from 1/20 to 1/2, less than its value by below one.
	f := top<<60 | mid>>4
	hw := t.Hi >> (5 - s)
	// last and frac, V mod 10's integer part and fraction: 10·F.
	last, frac := bits.Mul64(f, 10)
	const margin = 8
	const half = 1 << 63
	// Too close to call: F within the margin of h/10 or of 1 - h/10, or
	// V's fraction within the product's error (20 units) below a half.
	if f-hw+margin < 2*margin || f+hw+margin < 2*margin || frac-(half-32) < 33 {
		return 0, 0, 0, false
	}
	// A multiple of ten inside, below V or above, is the shortest;
	// otherwise the integer nearest V, whose last digit is last or
	// last+1 (frac is not a half here) and not zero: it carries nothing
	// into q. Selections by arithmetic rather than branches, since which
	// case holds is as random as the digits.
	var below, above uint64
	if f+margin < hw {
		below = 1
	}
	if f > -hw+margin {
		above = 1
	}
	last = (last + frac>>63) & ((below | above) - 1)
	return q + above, last, k, true
}

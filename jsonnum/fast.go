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
// nearest V, always inside it since h > 1/2. The decisions compare V's
// fraction and V mod 10 with h in fixed point; the product's error is
// below 2^-63, so a comparison closer than a few units of 2^-60 is left
// undecided, which takes in the exact ties and the bounds that fall
// exactly on a multiple of ten (whose inclusion depends on mant's
// parity): Dragonbox rules on those.
func fastShortest(mant uint64, exp int) (head, last uint64, dexp int, ok bool) {
	k := mulLog10_2(exp)
	// 10^-k = T × 2^(L-127), T the table's 128 bits (truncated, error
	// below one unit), L = ⌊log2(10^-k)⌋; V = (mant << s) × T / 2^128.
	t := pow10Tab[-k-pow10Min]
	s := uint(exp + mulLog2_10(-k) + 1) // 1 to 4 (TestFastShift)
	m := mant << s
	a1, a0 := bits.Mul64(m, t.Hi)
	b1, _ := bits.Mul64(m, t.Lo)
	frac, carry := bits.Add64(a0, b1, 0)
	v := a1 + carry // ⌊V⌋, below 2^57; V - v - frac/2^64 in [0, 2^-63)

	// In units of 2^-60: w is V mod 10 (V less the multiple of ten below
	// it), u what V lacks to the multiple above, hw is h (error below
	// one unit, h·2^60 = T × 2^(s-69)); w's error lies in [0, 2).
	q := v / 10 // below 10^16, as V < 10·2^53
	r := v - q*10
	w := r<<60 | frac>>4
	u := 10<<60 - w
	hw := t.Hi >> (5 - s)
	const margin = 4
	const half = 1 << 63
	// Too close to call: w or u within the margin of hw, or V's fraction
	// within the product's error of a half.
	if w-hw+margin < 2*margin || u-hw+margin < 2*margin || frac-(half-2) < 3 {
		return 0, 0, 0, false
	}
	// A multiple of ten inside, below V or above, is the shortest;
	// otherwise the integer nearest V, v or v+1 (frac is not a half
	// here), which is not a multiple of ten: its last digit r or r+1
	// carries nothing into q. Selections by arithmetic rather than
	// branches, since which case holds is as random as the digits.
	var below, above uint64
	if w+margin < hw {
		below = 1
	}
	if u+margin < hw {
		above = 1
	}
	last = (r + frac>>63) & ((below | above) - 1)
	return q + above, last, k, true
}

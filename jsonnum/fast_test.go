package jsonnum

import (
	"flag"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

var randomBits = flag.Int("jsonnum.bits", 0, "random bit patterns TestAppendRandomBits and TestFastAsDragonbox check (default 3,000,000 and 20,000,000; a tenth with -short)")

// count is *randomBits if given, else def, a tenth of it with -short.
func count(def int) int {
	switch {
	case *randomBits > 0:
		return *randomBits
	case testing.Short():
		return def / 10
	}
	return def
}

// TestAppendRandomBits is an equivalence test: Append against strconv,
// and every 16th against encoding/json, on random bit patterns, which
// spread evenly over the exponents (NaN, infinities and subnormals
// included, at their share).
func TestAppendRandomBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 14))
	for i := range count(3_000_000) {
		f := math.Float64frombits(rng.Uint64())
		check(t, f)
		if i%16 == 0 {
			checkJSON(t, f)
		}
	}
}

// TestFastAsDragonbox is an equivalence test of the digits alone:
// fastShortest, its zeros trimmed, against Dragonbox (shortest) wherever
// it decides,
// on random significands at every normal exponent in turn, and the cases
// it leaves to Dragonbox stay rare.
func TestFastAsDragonbox(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 27))
	n := count(10_000_000)
	undecided := 0
	for i := range n {
		mant := 1<<52 | rng.Uint64()&(1<<52-1)
		exp := 1 + i%2046 - 1075
		if !fastAsDragonbox(t, mant, exp) {
			undecided++
		}
	}
	t.Logf("%d of %d left to Dragonbox", undecided, n)
	if undecided > n/500 {
		t.Errorf("fastShortest left %d of %d to Dragonbox, want at most 1 in 500", undecided, n)
	}
}

// TestFastBounds checks the significands whose rounding interval ends
// exactly on a shorter candidate (a multiple of ten at fastShortest's scale),
// kept when the significand is even and not when odd; those whose scaled
// value is an exact tie between two 17-digit candidates (exponent -2);
// and the first and last significands of every exponent, the smallest
// and largest normals among them.
func TestFastBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 52))
	cases, decided := 0, 0
	for exp := 1 - 1075; exp <= 2046-1075; exp++ {
		for _, mant := range []uint64{1<<52 + 1, 1<<52 + 2, 1<<53 - 2, 1<<53 - 1} {
			fastAsDragonbox(t, mant, exp)
			check(t, math.Ldexp(float64(mant), exp))
		}
	}
	// A bound (2·mant ± 1)·2^(exp-1) is a multiple of 10^(dexp+1) when
	// 5^(dexp+1) divides 2·mant ± 1 and exp-1 > dexp: exponents 3 to 76.
	for exp := 3; exp <= 80; exp++ {
		q := new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(mulLog10_2(exp)+1)), nil)
		if !q.IsUint64() || q.Uint64() >= 1<<54 {
			continue
		}
		// The odd multiples of q in [2^53, 2^54), as 2·mant ± 1 are.
		step := 2 * q.Uint64()
		first := q.Uint64() * (1<<53/q.Uint64() | 1)
		for first < 1<<53 {
			first += step
		}
		if first >= 1<<54 {
			continue
		}
		many := (1<<54-1-first)/step + 1
		for k := range uint64(2000) {
			odd := first + k%many*step
			if k >= 1000 { // a random half, across the binade
				odd = first + rng.Uint64N(many)*step
			}
			for _, mant := range []uint64{(odd - 1) / 2, (odd + 1) / 2} { // bound above, bound below
				if mant <= 1<<52 || mant >= 1<<53 {
					continue
				}
				cases++
				if fastAsDragonbox(t, mant, exp) {
					decided++
				}
				check(t, math.Ldexp(float64(mant), exp))
			}
		}
	}
	t.Logf("%d significands with a bound on a shorter candidate, %d decided by fastShortest", cases, decided)
	if cases < 100_000 {
		t.Errorf("%d bound cases, want many more", cases)
	}
	for range 100_000 {
		mant := 1<<52 | rng.Uint64()&(1<<52-1) | 1 // odd: scaled by ten, a tie
		fastAsDragonbox(t, mant, -2)
		check(t, math.Ldexp(float64(mant), -2))
	}
}

// fastAsDragonbox fails t if fastShortest(mant, exp) decides digits
// other than Dragonbox's, and says whether it decided.
func fastAsDragonbox(t *testing.T, mant uint64, exp int) bool {
	t.Helper()
	if mant == 1<<52 {
		return false // Dragonbox's own branch, never asked of fastShortest
	}
	head, last, dexp, ok := fastShortest(mant, exp)
	if !ok {
		return false
	}
	sig := 10*head + last
	if head >= 1e16 || last > 9 || sig < 1e15 || sig >= 1e17 {
		t.Fatalf("fastShortest(%d, %d) = 10×%d + %d, want 16 or 17 digits", mant, exp, head, last)
	}
	sig, zeros := trimZeros(sig)
	want, wantExp := shortest(mant, exp)
	if sig != want || dexp+zeros != wantExp {
		t.Fatalf("fastShortest(%d, %d) = %de%d, Dragonbox %de%d", mant, exp, sig, dexp+zeros, want, wantExp)
	}
	return true
}

// TestFastShift checks that every normal exponent's shift lies in 1..5,
// which the half-width's shift and the 57-bit product assume.
func TestFastShift(t *testing.T) {
	for exp := 1 - 1075; exp <= 2046-1075; exp++ {
		if s := exp + mulLog2_10(-mulLog10_2(exp)-1) + 5; s < 1 || s > 5 {
			t.Fatalf("shift at exponent %d = %d, want 1 to 5", exp, s)
		}
	}
}

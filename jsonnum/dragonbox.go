// Copyright 2025 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file (jsonnum/LICENSE, Go's).

// The shortest digits of a float64 by the Dragonbox algorithm by Junekey
// Jeon, as Go's internal/strconv (ftoadbox.go, math.go) computes them
// since Go 1.26: its float64 path, copied for the digits and exponent
// strconv does not expose, with the 128-bit products taken by
// math/bits.Mul64. The paper:
// https://github.com/jk-jeon/dragonbox/blob/d5dc40ae6a3f1a4559cda816738df2d6255b4e24/other_files/Dragonbox.pdf

package jsonnum

//go:generate go run pow10gen.go

import (
	"math"
	"math/bits"
)

type uint128 struct{ Hi, Lo uint64 }

// shortest returns the shortest digits and exponent of mant × 2^exp, a
// normal float64's significand (with its implicit bit) and exponent:
// mant × 2^exp = digits × 10^dexp, rounded to nearest, ties to even.
func shortest(mant uint64, exp int) (digits uint64, dexp int) {
	if mant == 1<<52 {
		// Algorithm 5.6 (page 24).
		k0 := -mulLog10_2MinusLog10_4Over3(exp)
		φ, β := dboxPow64(k0, exp)
		xi, zi := dboxRange64(φ, β)
		if exp != 2 && exp != 3 {
			xi++
		}
		q := zi / 10
		if xi <= q*10 {
			q, zeros := trimZeros(q)
			return q, -k0 + 1 + zeros
		}
		yru := dboxRoundUp64(φ, β)
		if exp == -77 && yru%2 != 0 {
			yru--
		} else if yru < xi {
			yru++
		}
		return yru, -k0
	}

	// κ = 2 for float64 (section 5.1.3)
	const (
		κ     = 2
		p10κ  = 100       // 10**κ
		p10κ1 = p10κ * 10 // 10**(κ+1)
	)

	// Algorithm 5.2 (page 15).
	k0 := -mulLog10_2(exp)
	φ, β := dboxPow64(κ+k0, exp)
	zi, exact := dboxMulPow64((mant*2+1)<<β, φ)
	s, r := zi/p10κ1, uint32(zi%p10κ1)
	δi := uint32(φ.Hi >> (64 - 1 - β))

	if r < δi {
		if r != 0 || !exact || mant%2 == 0 {
			s, zeros := trimZeros(s)
			return s, -k0 + 1 + zeros
		}
		s--
		r = p10κ * 10
	} else if r == δi {
		parity, exact := dboxParity64(mant*2-1, φ, β)
		if parity || (exact && mant%2 == 0) {
			s, zeros := trimZeros(s)
			return s, -k0 + 1 + zeros
		}
	}

	// Algorithm 5.4 (page 18).
	D := r + p10κ/2 - δi/2
	t, ρ := D/p10κ, D%p10κ
	yru := 10*s + uint64(t)
	if ρ == 0 {
		parity, exact := dboxParity64(mant*2, φ, β)
		if parity != ((D-p10κ/2)%2 != 0) || exact && yru%2 != 0 {
			yru--
		}
	}
	return yru, -k0
}

// dboxMulPow64 computes x^(i), y^(i), z^(i) from the precomputed value of
// φ̃k and also checks if x^(f), y^(f), z^(f) == 0 (section 5.2.1).
func dboxMulPow64(u uint64, φ uint128) (intPart uint64, isInt bool) {
	hi, lo := bits.Mul64(u, φ.Hi)
	t, _ := bits.Mul64(u, φ.Lo)
	lo, carry := bits.Add64(lo, t, 0)
	return hi + carry, lo == 0
}

// dboxParity64 computes only the parity of x^(i), y^(i), z^(i) from the
// precomputed value of φ̃k and also checks if x^(f), y^(f), z^(f) = 0
// (section 5.2.1).
func dboxParity64(mant2 uint64, φ uint128, β int) (parity bool, isInt bool) {
	hl, lo := bits.Mul64(mant2, φ.Lo)
	hi := mant2*φ.Hi + hl
	parity = (hi>>(64-β))&1 != 0
	isInt = hi<<β|lo>>(64-β) == 0
	return parity, isInt
}

// mulLog10_2 is ⌊x·log10(2)⌋ for -1600 <= x <= 1600.
func mulLog10_2(x int) int { return (x * 78913) >> 18 }

// mulLog2_10 is ⌊x·log2(10)⌋ for -500 <= x <= 500.
func mulLog2_10(x int) int { return (x * 108853) >> 15 }

// mulLog10_2MinusLog10_4Over3 computes ⌊e·log10(2) - log10(4/3)⌋
// (section 6.3), for e in [-2985, 2936].
func mulLog10_2MinusLog10_4Over3(e int) int { return (e*631305 - 261663) >> 21 }

// dboxRange64 returns the left and right endpoints.
func dboxRange64(φ uint128, β int) (left, right uint64) {
	left = (φ.Hi - (φ.Hi >> (52 + 2))) >> (64 - 52 - 1 - β)
	right = (φ.Hi + (φ.Hi >> (52 + 1))) >> (64 - 52 - 1 - β)
	return left, right
}

// dboxRoundUp64 computes the round up of y (y^(ru)).
func dboxRoundUp64(φ uint128, β int) uint64 {
	return (φ.Hi>>(128/2-52-2-β) + 1) / 2
}

// dboxPow64 gets the precomputed value of φ̃̃k.
func dboxPow64(k, e int) (φ uint128, β int) {
	φ = pow10Tab[k-pow10Min]
	if k < 0 || k > 55 {
		φ.Lo++
	}
	return φ, e + 1 + mulLog2_10(k) - 1
}

// trimZeros removes the trailing zeros of x and returns how many.
func trimZeros(x uint64) (uint64, int) {
	const (
		div1e8m  = 0xc767074b22e90e21
		div1e8le = math.MaxUint64 / 100000000

		div1e4m  = 0xd288ce703afb7e91
		div1e4le = math.MaxUint64 / 10000

		div1e2m  = 0x8f5c28f5c28f5c29
		div1e2le = math.MaxUint64 / 100

		div1e1m  = 0xcccccccccccccccd
		div1e1le = math.MaxUint64 / 10
	)
	// Cut 8 zeros, then 4, then 2, then 1.
	p := 0
	for d := bits.RotateLeft64(x*div1e8m, -8); d <= div1e8le; d = bits.RotateLeft64(x*div1e8m, -8) {
		x = d
		p += 8
	}
	if d := bits.RotateLeft64(x*div1e4m, -4); d <= div1e4le {
		x = d
		p += 4
	}
	if d := bits.RotateLeft64(x*div1e2m, -2); d <= div1e2le {
		x = d
		p += 2
	}
	if d := bits.RotateLeft64(x*div1e1m, -1); d <= div1e1le {
		x = d
		p += 1
	}
	return x, p
}

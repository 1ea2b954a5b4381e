package batch

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// scanNumber scans the JSON number at p,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and returns its value,
// the float64 nearest to it (ties to even), as strconv.ParseFloat does,
// and where it ends. It reads the digits once, as it scans them: strconv
// would read them again, more generally, which cost most of the
// scanner's time with ten numbers a reading. A number of more than 19
// significant digits, an exponent past the table or a case Eisel-Lemire
// cannot decide goes to strconv.ParseFloat; one beyond a float64 is
// errNotPlain.
func scanNumber(b []byte, p int) (float64, int, error) {
	if len(b)-p >= decimalRoom {
		if f, end, ok := scanDecimal(b, p); ok {
			return f, end, nil
		}
	}
	return scanAnyNumber(b, p)
}

// scanAnyNumber is scanNumber without its fast path, for a number
// scanDecimal did not take.
func scanAnyNumber(b []byte, p int) (float64, int, error) {
	start := p
	neg := b[p] == '-'
	if neg {
		p++
		if p == len(b) {
			return 0, 0, errShort
		}
	}
	var (
		man    uint64 // the significant digits, the first 19 of them
		digits int    // how many man holds
		exp10  int    // the value is man × 10^exp10
		many   bool   // more than 19 significant digits
	)
	switch c := b[p]; {
	case c == '0':
		p++
	case c >= '1' && c <= '9':
		start := p
		p, man, digits, many = scanDigits(b, p, man, digits)
		if many {
			exp10 = p - start - digits
		}
	default:
		return 0, 0, errNotPlain
	}
	if p < len(b) && b[p] == '.' {
		p++
		start := p
		if man == 0 { // zeros after the point are not significant yet
			for p < len(b) && b[p] == '0' {
				p++
			}
			exp10 = start - p
		}
		held := digits
		p, man, digits, many = scanDigits(b, p, man, digits)
		if p == start {
			return 0, 0, shortOrNotPlain(b, p)
		}
		exp10 -= digits - held
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		p++
		eneg := false
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			eneg = b[p] == '-'
			p++
		}
		q, e := p, 0
		for ; p < len(b) && b[p] >= '0' && b[p] <= '9'; p++ {
			if e < 10000 { // far past any float64; strconv decides
				e = e*10 + int(b[p]-'0')
			}
		}
		if p == q {
			return 0, 0, shortOrNotPlain(b, p)
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	if p == len(b) {
		return 0, 0, errShort // the number may go on in the next chunk
	}
	if !many {
		if f, ok := exactFloat(man, exp10, neg); ok {
			return f, p, nil
		}
	}
	f, err := strconv.ParseFloat(string(b[start:p]), 64)
	if err != nil {
		return 0, 0, errNotPlain
	}
	return f, p, nil
}

// decimalRoom is how much of the body scanDecimal may read from a
// number's start: a sign, eight bytes of the integer's digits, the point
// and two eight-byte words of the fraction's.
const decimalRoom = 1 + 8 + 1 + 8 + 8

// scanDecimal is scanNumber's fast path for the numbers sensors write,
// -?(0|[1-9][0-9]{0,6})(\.[0-9]{1,16})? of at most 19 significant digits
// and no exponent, when decimalRoom bytes are in from p: each of its
// three parts read as one word, without scanDigits' loop. It reports
// false for any other number, which scanNumber then scans, and for one
// Eisel-Lemire cannot decide.
func scanDecimal(b []byte, p int) (float64, int, bool) {
	// One window of decimalRoom bytes, and each part at most a word, so
	// that the compiler proves every index in it: no bounds checks.
	le, r := binary.LittleEndian, b[p:][:decimalRoom]
	i := 0
	neg := r[0] == '-'
	if neg {
		i = 1
	}
	w := le.Uint64(r[i:])
	n := leadingDigits(w)
	if n == 0 || n == 8 || n > 1 && r[i] == '0' {
		return 0, 0, false
	}
	man, exp10 := digitsValue(w, n), 0
	i += n
	if r[i] == '.' {
		i++
		w = le.Uint64(r[i:])
		k := leadingDigits(w)
		if k == 0 {
			return 0, 0, false // no digit after the point
		}
		man = man*pow10Uint[k] + digitsValue(w, k)
		i += k
		exp10 = -k
		if k == 8 {
			w = le.Uint64(r[i:])
			k = leadingDigits(w)
			if n+8+k > 19 {
				return 0, 0, false
			}
			man = man*pow10Uint[k] + digitsValue(w, k)
			i += k
			exp10 -= k
			if k == 8 && r[i]-'0' < 10 {
				return 0, 0, false // more than 16 digits after the point
			}
		}
	}
	if c := r[i]; c == 'e' || c == 'E' {
		return 0, 0, false
	}
	// exactFloat's cases, without its call: 10^-exp10, up to 10^16, is
	// an exact float64.
	switch {
	case man == 0:
		f, ok := exactFloat(man, exp10, neg)
		return f, p + i, ok
	case man < 1<<53:
		f := float64(man) / exactPow10[-exp10]
		if neg {
			f = -f // rounding to nearest is symmetric: -(a/b) is (-a)/b
		}
		return f, p + i, true
	}
	f, ok := eiselLemire(man, exp10, neg)
	return f, p + i, ok
}

// scanDigits scans the digits at p, adding them to man, which holds
// digits of them, as long as it holds at most 19; it reports many when
// there were more. Every digit it scans is significant: the caller skips
// the zeros that lead. It takes up to eight at a time, as many as lead
// the eight bytes at p, while man has room for them.
func scanDigits(b []byte, p int, man uint64, digits int) (end int, _ uint64, _ int, many bool) {
	for len(b)-p >= 8 {
		v := binary.LittleEndian.Uint64(b[p:])
		n := leadingDigits(v)
		if digits+n > 19 {
			break
		}
		man = man*pow10Uint[n] + digitsValue(v, n)
		digits += n
		p += n
		if n < 8 {
			return p, man, digits, false
		}
	}
	for ; p < len(b) && b[p] >= '0' && b[p] <= '9'; p++ {
		if digits == 19 {
			many = true
			continue
		}
		man = man*10 + uint64(b[p]-'0')
		digits++
	}
	return p, man, digits, many
}

// leadingDigits is how many of the eight bytes of v, read little-endian,
// are ASCII digits before the first that is not. A byte is a digit when
// its high nibble is 3 and stays 3 with 6 added (Lemire, "Fast float
// parsing in practice"); the carry of a byte past 0xf9 reaches only the
// bytes after it, which its own non-digit has already ended.
func leadingDigits(v uint64) int {
	t := v&0xF0F0F0F0F0F0F0F0 | (v+0x0606060606060606)&0xF0F0F0F0F0F0F0F0>>4
	return bits.TrailingZeros64(t^0x3333333333333333) / 8
}

// digitsValue is the value of the first n bytes of v, n ASCII digits:
// shifted to the top of the word, under n-8 zeros, and read eight at
// once (Lemire's parse_eight_digits). The bytes past them go with the
// shift; a borrow from them, in subtracting '0', goes only up.
func digitsValue(v uint64, n int) uint64 {
	v = (v - 0x3030303030303030) << (64 - 8*n)
	v = v*10 + v>>8
	v = (v&0x000000FF000000FF*(100+1000000<<32) + v>>16&0x000000FF000000FF*(1+10000<<32)) >> 32
	return uint64(uint32(v))
}

var pow10Uint = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8}

// exactFloat is man × 10^exp10 rounded to the nearest float64, ties to
// even, when it can tell it fast: with floating-point arithmetic where
// that is exact, else by Eisel-Lemire. It is strconv's own fast paths
// (internal/strconv's atof64exact and eiselLemire64), which it reaches only
// after reading the number again.
func exactFloat(man uint64, exp10 int, neg bool) (float64, bool) {
	if man == 0 {
		if neg {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	if man < 1<<53 && exp10 >= -22 && exp10 <= 22 {
		// man and 10^|exp10| are exact float64s, so that one operation
		// rounds once, correctly.
		f := float64(man)
		if neg {
			f = -f
		}
		if exp10 < 0 {
			return f / exactPow10[-exp10], true
		}
		return f * exactPow10[exp10], true
	}
	return eiselLemire(man, exp10, neg)
}

var exactPow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// eiselLemire is internal/strconv's eiselLemire64 (Go 1.26), with the
// table of powers of ten cut to the exponents sensors write; see
// https://nigeltao.github.io/blog/2020/eisel-lemire.html for the
// sections its comments name. It reports false where it cannot decide.
func eiselLemire(man uint64, exp10 int, neg bool) (float64, bool) {
	const float64Bias = -1023
	if exp10 < pow10Min || exp10 > pow10Max {
		return 0, false
	}
	pow := pow10Table[exp10-pow10Min]
	exp2 := 1 + (exp10*108853)>>15 // 1 + ⌊exp10 × log2(10)⌋

	// Normalization.
	clz := bits.LeadingZeros64(man)
	man <<= uint(clz)
	retExp2 := uint64(exp2+63-float64Bias) - uint64(clz)

	// Multiplication.
	xHi, xLo := bits.Mul64(man, pow.hi)

	// Wider Approximation.
	if xHi&0x1FF == 0x1FF && xLo+man < man {
		yHi, yLo := bits.Mul64(man, pow.lo)
		mergedHi, mergedLo := xHi, xLo+yHi
		if mergedLo < xLo {
			mergedHi++
		}
		if mergedHi&0x1FF == 0x1FF && mergedLo+1 == 0 && yLo+man < man {
			return 0, false
		}
		xHi, xLo = mergedHi, mergedLo
	}

	// Shifting to 54 Bits.
	msb := xHi >> 63
	retMantissa := xHi >> (msb + 9)
	retExp2 -= 1 ^ msb

	// Half-way Ambiguity.
	if xLo == 0 && xHi&0x1FF == 0 && retMantissa&3 == 1 {
		return 0, false
	}

	// From 54 to 53 Bits.
	retMantissa += retMantissa & 1
	retMantissa >>= 1
	if retMantissa>>53 > 0 {
		retMantissa >>= 1
		retExp2++
	}
	// Subnormal, Inf or NaN: strconv's slow path.
	if retExp2-1 >= 0x7FF-1 {
		return 0, false
	}
	retBits := retExp2<<52 | retMantissa&(1<<52-1)
	if neg {
		retBits |= 1 << 63
	}
	return math.Float64frombits(retBits), true
}

// The powers of ten eiselLemire knows: sensors write nothing near a
// float64's ends, and strconv takes what is beyond.
const (
	pow10Min = -64
	pow10Max = 64
)

// pow10Table holds 10^e for e from pow10Min to pow10Max as strconv's own
// table does (internal/strconv/pow10gen.go): ⌊10^e × 2^k⌋ for the k that
// puts it in [2^127, 2^128).
var pow10Table = func() (table [pow10Max - pow10Min + 1]struct{ hi, lo uint64 }) {
	ten := big.NewInt(10)
	for e := pow10Min; e <= pow10Max; e++ {
		p := new(big.Int).Exp(ten, big.NewInt(int64(max(e, -e))), nil)
		var m *big.Int
		if e >= 0 {
			m = new(big.Int).Set(p)
			if shift := m.BitLen() - 128; shift > 0 {
				m.Rsh(m, uint(shift))
			} else {
				m.Lsh(m, uint(-shift))
			}
		} else {
			// 2^(127+n) / 10^-e, for 10^-e of n bits, is in (2^127,
			// 2^128): 10^-e is no power of two.
			m = new(big.Int).Lsh(big.NewInt(1), uint(127+p.BitLen()))
			m.Quo(m, p)
		}
		lo := new(big.Int).And(m, new(big.Int).SetUint64(math.MaxUint64))
		table[e-pow10Min].hi = new(big.Int).Rsh(m, 64).Uint64()
		table[e-pow10Min].lo = lo.Uint64()
	}
	return table
}()

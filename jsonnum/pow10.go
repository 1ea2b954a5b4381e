package jsonnum

import "math/big"

// The powers of ten Dragonbox needs, from 10^pow10Min to 10^pow10Max.
const (
	pow10Min = -348
	pow10Max = 347
)

// pow10Tab holds the 128-bit mantissas of powers of ten, 10^e truncated
// to 128 bits with the high bit set: the table Go's strconv generates
// (pow10gen.go), computed once here rather than copied.
var pow10Tab = pow10Table()

func pow10Table() []uint128 {
	var (
		one    = big.NewInt(1)
		ten    = big.NewInt(10)
		b1p64  = new(big.Int).Lsh(one, 64)
		b1p127 = new(big.Int).Lsh(one, 127)
		b1p128 = new(big.Int).Lsh(one, 128)
		tab    = make([]uint128, 0, pow10Max-pow10Min+1)
		d, m   = new(big.Int), new(big.Int)
	)
	for e := int64(pow10Min); e <= pow10Max; e++ {
		// ⌊10^e × 2^s⌋ with the s that puts it in [2^127, 2^128).
		p := new(big.Int).Exp(ten, big.NewInt(max(e, -e)), nil)
		if e >= 0 {
			d.Set(p)
			for d.Cmp(b1p128) >= 0 {
				d.Rsh(d, 1)
			}
			for d.Cmp(b1p127) < 0 {
				d.Lsh(d, 1)
			}
		} else {
			// 2^s / 10^-e, with s the smallest to reach 2^127.
			s := uint(p.BitLen() + 127)
			d.Quo(new(big.Int).Lsh(one, s), p)
			for d.Cmp(b1p127) < 0 {
				s++
				d.Quo(new(big.Int).Lsh(one, s), p)
			}
		}
		hi := new(big.Int)
		hi.DivMod(d, b1p64, m)
		tab = append(tab, uint128{hi.Uint64(), m.Uint64()})
	}
	return tab
}

package batch

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// Entries of internal/strconv/pow10tab.go, which pow10Table must match.
var pow10TableTests = []struct {
	e      int
	hi, lo uint64
}{
	{-64, 0xa87fea27a539e9a5, 0x3f2398d747b36224},
	{-1, 0xcccccccccccccccc, 0xcccccccccccccccc},
	{0, 0x8000000000000000, 0x0000000000000000},
	{1, 0xa000000000000000, 0x0000000000000000},
	{22, 0x878678326eac9000, 0x0000000000000000},
	{23, 0xa968163f0a57b400, 0x0000000000000000},
	{64, 0xc2781f49ffcfa6d5, 0x3cbf6b71c76b25fb},
}

func TestPow10Table(t *testing.T) {
	for _, tt := range pow10TableTests {
		if got := pow10Table[tt.e-pow10Min]; got.hi != tt.hi || got.lo != tt.lo {
			t.Errorf("pow10Table[1e%d] = %#x %#x, want %#x %#x", tt.e, got.hi, got.lo, tt.hi, tt.lo)
		}
	}
}

var scanNumberTests = []string{
	"0", "-0", "0.0", "-0.0", "0e5", "-0E-999", "0.000", "1", "-1", "9", "10", "1.5", "-3", "1e-300", "1e999", "-1e999",
	"123.456", "512.2534567890123", "512.25345678901234", "0.1", "0.30000000000000004", "9007199254740993",
	"9007199254740992", "18446744073709551615", "18446744073709551616", "99999999999999999999",
	"1234567890123456789", "12345678901234567890", "1.2345678901234567890123", "0.000000000000000000000000001234",
	"1e22", "1e23", "1.7976931348623157e308", "1.7976931348623159e308", "4.9e-324", "2.2250738585072011e-308",
	"2.2250738585072014e-308", "1e-64", "1e-65", "1e64", "1e65", "123e-66", "7.038531e-26", "1E+2", "1e+0",
	"0.0000000000000000000000000000000000000000001", "100000000000000000000000", "2.5", "-2.5e-3",
}

// scanNumber gives strconv.ParseFloat's value, bit for bit, and refuses
// what it refuses.
func TestScanNumber(t *testing.T) {
	for _, s := range scanNumberTests {
		checkScanNumber(t, s)
	}
}

// TestScanNumberRandom holds scanNumber to strconv on a million numbers
// as clients write them: shortest, fixed and exponent forms of random
// float64s, of every magnitude, and of random digit strings.
func TestScanNumberRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 1_000_000
	if testing.Short() {
		n = 50_000
	}
	for range n {
		var f float64
		switch rng.IntN(3) {
		case 0:
			f = rng.Float64() * 1000
		case 1:
			f = math.Float64frombits(rng.Uint64())
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
		default:
			f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
		checkScanNumber(t, strconv.FormatFloat(f, 'g', -1, 64))
		checkScanNumber(t, strconv.FormatFloat(f, 'e', rng.IntN(22), 64))
		if math.Abs(f) < 1e25 {
			checkScanNumber(t, strconv.FormatFloat(f, 'f', rng.IntN(25), 64))
		}
		// Digits no float64 prints: halfway cases and beyond.
		digits := []byte(strconv.FormatUint(rng.Uint64()>>rng.IntN(64), 10))
		s := string(digits)
		if cut := rng.IntN(len(digits) + 1); cut < len(digits) {
			s = string(digits[:cut]) + "." + string(digits[cut:])
			if cut == 0 {
				s = "0" + s
			}
		}
		checkScanNumber(t, s+"e"+strconv.Itoa(rng.IntN(80)-40))
	}
}

// checkScanNumber checks s followed by a comma, at the end of what is in
// and before as much again as scanDecimal reads, digits that must not
// be taken for the number's.
func checkScanNumber(t *testing.T, s string) {
	t.Helper()
	checkScanNumberIn(t, s, s+",")
	checkScanNumberIn(t, s, s+",12345678901234567890123456789")
}

func checkScanNumberIn(t *testing.T, s, in string) {
	t.Helper()
	want, wantErr := strconv.ParseFloat(s, 64)
	got, end, err := scanNumber([]byte(in), 0)
	switch {
	case wantErr != nil:
		if err == nil {
			t.Fatalf("scanNumber(%q) = %v; strconv refuses it: %v", s, got, wantErr)
		}
	case err != nil || end != len(s):
		t.Fatalf("scanNumber(%q) = %v, %d, %v; want %v, %d", s, got, end, err, want, len(s))
	case math.Float64bits(got) != math.Float64bits(want):
		t.Fatalf("scanNumber(%q) = %v (%#x), want %v (%#x)", s, got, math.Float64bits(got), want, math.Float64bits(want))
	}
}

// leadingDigits and digitsValue read up to eight digits at once: held
// to a byte at a time on every count of digits, followed by every byte,
// those past 0xf9 whose carry crosses into the next byte included.
func TestLeadingDigits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		var word [8]byte
		n := rng.IntN(9)
		for i := range word {
			if i < n {
				word[i] = '0' + byte(rng.IntN(10))
			} else {
				word[i] = byte(rng.Uint32())
			}
		}
		if n < 8 && rng.IntN(2) == 0 {
			word[n] = 0xfa + byte(rng.IntN(6))
		}
		want, value := 0, uint64(0)
		for want < 8 && word[want] >= '0' && word[want] <= '9' {
			value = value*10 + uint64(word[want]-'0')
			want++
		}
		v := binary.LittleEndian.Uint64(word[:])
		if got := leadingDigits(v); got != want {
			t.Fatalf("leadingDigits(%q) = %d, want %d", word, got, want)
		}
		if got := digitsValue(v, want); got != value {
			t.Fatalf("digitsValue(%q, %d) = %d, want %d", word, want, got, value)
		}
	}
}

// BenchmarkScanNumber scans numbers as a body holds them, each followed
// by more of the body.
func BenchmarkScanNumber(b *testing.B) {
	var nums [][]byte
	for _, s := range []string{"512.2534567890123", "12.25345678901234", "999.1234567890123", "0.1234567890123456", "13.700000000000001"} {
		nums = append(nums, []byte(s+`,"10":512.2534567890123}},{"datetime":`))
	}
	for b.Loop() {
		for _, n := range nums {
			if _, _, err := scanNumber(n, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
}

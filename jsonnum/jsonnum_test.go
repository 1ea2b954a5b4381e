package jsonnum

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// edges are floats where a format or a branch of the algorithm changes.
var edges = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 0.2, 0.3, 1.5, 2803.5, -40.25, 100, 1e20, 123456789012345678,
	1e-6, math.Nextafter(1e-6, 0), math.Nextafter(1e-6, 1), 1e-7, 1e21, math.Nextafter(1e21, 0), math.Nextafter(1e21, math.Inf(1)),
	1e22, 1e23, 5e-324, math.SmallestNonzeroFloat64, 2.2250738585072014e-308, math.MaxFloat64, -math.MaxFloat64,
	math.Inf(1), math.Inf(-1), math.NaN(), 1.7976931348623157e308, 9007199254740993, 0.000001234, 123.45678901234567,
}

func TestAppendEdges(t *testing.T) {
	for _, f := range edges {
		check(t, f)
	}
}

// TestAppendPowers covers Dragonbox's own branch, a significand of a
// power of two, at every exponent, and powers of ten with their
// neighbours.
func TestAppendPowers(t *testing.T) {
	for e := -1074; e <= 1023; e++ {
		f := math.Ldexp(1, e)
		check(t, f)
		check(t, -f)
		check(t, math.Nextafter(f, 0))
		check(t, math.Nextafter(f, math.Inf(1)))
	}
	for e := -330; e <= 308; e++ {
		f, _ := strconv.ParseFloat("1e"+strconv.Itoa(e), 64)
		check(t, f)
		check(t, math.Nextafter(f, 0))
		check(t, math.Nextafter(f, math.Inf(1)))
	}
}

// TestAppendRandom compares Append with strconv over random bit
// patterns, random values of the bench's kind, and short decimals.
func TestAppendRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	for range n {
		check(t, math.Float64frombits(rng.Uint64()))
		check(t, rng.Float64()*1000)
		check(t, float64(rng.IntN(2_000_000)-1_000_000)/math.Pow10(rng.IntN(8)))
	}
}

// FuzzAppendAsEncodingJSON checks the form promised: encoding/json's, so
// that the service's hand-written encoders are drop-ins for it.
func FuzzAppendAsEncodingJSON(f *testing.F) {
	for _, e := range edges {
		f.Add(e)
	}
	f.Fuzz(checkJSON)
}

// checkJSON fails t if Append writes v otherwise than encoding/json.
func checkJSON(t *testing.T, v float64) {
	t.Helper()
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return // not JSON
	}
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := Append(nil, v); string(got) != string(want) {
		t.Fatalf("Append(%v) = %s, encoding/json %s", v, got, want)
	}
}

// FuzzAppend compares Append with strconv, NaN and the infinities too.
func FuzzAppend(f *testing.F) {
	for _, e := range edges {
		f.Add(math.Float64bits(e))
	}
	f.Fuzz(func(t *testing.T, bits uint64) { check(t, math.Float64frombits(bits)) })
}

func check(t *testing.T, f float64) {
	t.Helper()
	prefix := []byte("x")
	got, want := Append(prefix, f), appendStrconv(prefix, f)
	if string(got) != string(want) {
		t.Fatalf("Append(%b) = %s, want %s", f, got, want)
	}
}

func TestAppendInt(t *testing.T) {
	for _, i := range []int64{0, 1, -1, 9, 10, 99, 100, 12345678, 99999999, 100000000, 1714564800123456, -1714564800123456,
		math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		if got, want := string(AppendInt([]byte("x"), i)), strconv.FormatInt(i, 10); got != "x"+want {
			t.Errorf("AppendInt(%d) = %s, want x%s", i, got, want)
		}
	}
}

func FuzzAppendInt(f *testing.F) {
	f.Add(int64(1714564800123456))
	f.Fuzz(func(t *testing.T, i int64) {
		if got, want := string(AppendInt(nil, i)), strconv.FormatInt(i, 10); got != want {
			t.Fatalf("AppendInt(%d) = %s, want %s", i, got, want)
		}
	})
}

func TestPow10Table(t *testing.T) {
	for _, c := range []struct {
		e    int
		want uint128
	}{
		{-348, uint128{0xfa8fd5a0081c0288, 0x1732c869cd60e453}},
		{-1, uint128{0xcccccccccccccccc, 0xcccccccccccccccc}},
		{0, uint128{0x8000000000000000, 0}},
		{1, uint128{0xa000000000000000, 0}},
		{347, uint128{0xd13eb46469447567, 0x4b7195f2d2d1a9fb}},
	} {
		if got := pow10Tab[c.e-pow10Min]; got != c.want {
			t.Errorf("pow10Tab[1e%d] = %#x, want %#x", c.e, got, c.want)
		}
	}
}

// BenchmarkAppend formats 10,000 numbers, a page of 1,000 readings of 10
// inputs: random values with 16 or 17 significant digits, as the bench's
// (Random), sensor-like values of a few digits (Short), and whole numbers
// such as alarm states and counts (Whole), by Append and by strconv.
func BenchmarkAppend(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := map[string][]float64{"Random": make([]float64, 10_000), "Short": make([]float64, 10_000), "Whole": make([]float64, 10_000)}
	for i := range 10_000 {
		sets["Random"][i] = rng.Float64() * 1000
		sets["Short"][i] = float64(rng.IntN(100_000)) / 100
		sets["Whole"][i] = float64(rng.IntN(2) * rng.IntN(10_000))
	}
	for _, name := range []string{"Random", "Short", "Whole"} {
		for _, impl := range []struct {
			name string
			fn   func([]byte, float64) []byte
		}{{"jsonnum", Append}, {"strconv", appendStrconv}} {
			b.Run(name+"/"+impl.name, func(b *testing.B) {
				// The thread's CPU, which other processes on the machine
				// move less than the wall time: the figure to compare.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				buf := make([]byte, 0, 1<<18)
				cpu := threadCPU(b)
				for b.Loop() {
					buf = buf[:0]
					for _, f := range sets[name] {
						buf = impl.fn(buf, f)
						buf = append(buf, ',')
					}
				}
				b.ReportMetric(float64(threadCPU(b)-cpu)/float64(b.N*len(sets[name])), "cpu-ns/number")
			})
		}
	}
}

// threadCPU is the CPU time of the calling thread, user and system.
func threadCPU(tb testing.TB) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &u); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not name.
const rusageThread = 1

func TestEightDigits(t *testing.T) {
	for x := uint32(0); x < 1e8; x += 997 {
		for _, y := range []uint32{x, 99_999_999 - x} {
			got := make([]byte, 8)
			binary.LittleEndian.PutUint64(got, eightDigits(y))
			if want := fmt.Sprintf("%08d", y); string(got) != want {
				t.Fatalf("eightDigits(%d) = %q, want %q", y, got, want)
			}
		}
	}
}

// TestAppendLayouts checks every place of the decimal point against
// every count of significant digits, 1 to 17, each sign: the point
// within the digits after the first to the seventh (Append's words),
// further in, at their end, before them with zeros, and with exponents.
func TestAppendLayouts(t *testing.T) {
	const digits = "98765432198765432"
	for nd := 1; nd <= 17; nd++ {
		for _, d := range []string{digits[:nd], "1" + "00000000000000000"[:nd-1], digits[:nd-1] + "1"} {
			if d[len(d)-1] == '0' && nd > 1 {
				d = d[:nd-1] + "5"
			}
			for dp := -9; dp <= 24; dp++ {
				f, err := strconv.ParseFloat("0."+d+"e"+strconv.Itoa(dp), 64)
				if err != nil {
					t.Fatal(err)
				}
				check(t, f)
				check(t, -f)
			}
		}
	}
}

// Package batchtest holds the readings bodies that the decoder's and the
// server's benchmarks and tests share, and the CPU clock they report by.
package batchtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Body is a POST body of 1,000 readings of 10 inputs, the shape of
// the performance targets.
func Body() []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"datetime":"2024-05-01T12:%02d:%02d.%06dZ","inputs":{`, i/60%60, i%60, i)
		for k := 1; k <= 10; k++ {
			if k > 1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%d":%g`, k, float64(i*k)*1.37)
		}
		b.WriteString("}}")
	}
	b.WriteByte(']')
	return b.Bytes()
}

// BenchBody is a POST body as `make bench` sends it (scripts/bench's
// appendJSON): 1,000 readings a second apart, inputs 1 to 10, values
// uniform in [0, 1000) written with every digit they need (most have 16
// or 17).
func BenchBody() []byte { return BenchBodyOf(1000) }

// BenchBodyOf is BenchBody's first n readings.
func BenchBodyOf(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	b := []byte{'['}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"datetime":"`...)
		b = start.Add(time.Duration(i)*time.Second).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","inputs":{`...)
		for k := 1; k <= 10; k++ {
			if k > 1 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = strconv.AppendInt(b, int64(k), 10)
			b = append(b, `":`...)
			b = strconv.AppendFloat(b, rng.Float64()*1000, 'f', -1, 64)
		}
		b = append(b, "}}"...)
	}
	return append(b, ']')
}

// ProcessCPU is the process's CPU time so far, user and system.
func ProcessCPU(tb testing.TB) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

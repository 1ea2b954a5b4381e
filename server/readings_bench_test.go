package server

import (
	"bytes"
	"fmt"
	"testing"
)

// benchBatch is a POST body of 1,000 readings of 10 inputs, the shape of
// the performance targets.
func benchBatch() []byte {
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

// BenchmarkDecodeReadingBatch measures what the service does to a POST body
// before the database sees it: decode, check and sort into columns.
func BenchmarkDecodeReadingBatch(b *testing.B) {
	body := benchBatch()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeReadingBatch(bytes.NewReader(body), 10000); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/reading")
}

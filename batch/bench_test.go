package batch

import (
	"bytes"
	"testing"

	"github.com/sensorreadings/readings/batch/batchtest"
)

// BenchmarkDecodeReadingBatch measures what the service does to a POST body
// before the database sees it: decode, check and sort into columns.
func BenchmarkDecodeReadingBatch(b *testing.B) {
	benchmarkDecode(b, batchtest.Body())
}

// BenchmarkDecodeBenchBatch is BenchmarkDecodeReadingBatch on the body
// `make bench` posts, whose longer numbers cost more to parse.
func BenchmarkDecodeBenchBatch(b *testing.B) {
	benchmarkDecode(b, batchtest.BenchBody())
}

// benchmarkDecode decodes as the server does, into memory released for
// the next batch once it is stored. It reports, beside the time per
// reading, the process's CPU time per reading (the garbage collector's
// included), which holds on a machine that others share where the time
// does not.
func benchmarkDecode(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := batchtest.ProcessCPU(b)
	for b.Loop() {
		var readings Readings
		if err := readings.Decode(bytes.NewReader(body), 10000, 100); err != nil {
			b.Fatal(err)
		}
		readings.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/reading")
	b.ReportMetric(float64((batchtest.ProcessCPU(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-ns/reading")
}

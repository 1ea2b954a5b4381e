package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
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

// makeBenchBatch is a POST body as `make bench` sends it (scripts/bench's
// appendJSON): 1,000 readings a second apart, inputs 1 to 10, values
// uniform in [0, 1000) written with every digit they need (most have 16
// or 17).
func makeBenchBatch() []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	b := []byte{'['}
	for i := range 1000 {
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

// BenchmarkDecodeReadingBatch measures what the service does to a POST body
// before the database sees it: decode, check and sort into columns.
func BenchmarkDecodeReadingBatch(b *testing.B) {
	benchmarkDecode(b, benchBatch())
}

// BenchmarkDecodeBenchBatch is BenchmarkDecodeReadingBatch on the body
// `make bench` posts, whose longer numbers cost more to parse.
func BenchmarkDecodeBenchBatch(b *testing.B) {
	benchmarkDecode(b, makeBenchBatch())
}

// benchmarkDecode reports, beside the time per reading, the process's CPU
// time per reading (the garbage collector's included), which holds on a
// machine that others share where the time does not.
func benchmarkDecode(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		if _, err := decodeReadingBatch(bytes.NewReader(body), 10000, 100); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/reading")
	b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-ns/reading")
}

// processCPU is the process's CPU time so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkEncodePage measures writing a page of 1,000 readings of 10
// inputs as JSON, and gzipping it as the server does for clients that
// accept it.
func BenchmarkEncodePage(b *testing.B) {
	readings, err := decodeReadingBatch(bytes.NewReader(benchBatch()), 10000, 100)
	if err != nil {
		b.Fatal(err)
	}
	var page []byte
	b.Run("JSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			page = page[:0]
			for i := range readings {
				page = appendReading(page, 12, &readings[i], nil, nil)
			}
		}
		b.SetBytes(int64(len(page)))
	})
	for _, level := range []int{gzip.BestSpeed, gzip.DefaultCompression} {
		b.Run(fmt.Sprintf("Gzip%d", level), func(b *testing.B) {
			var out bytes.Buffer
			w, _ := gzip.NewWriterLevel(&out, level)
			b.SetBytes(int64(len(page)))
			for b.Loop() {
				out.Reset()
				w.Reset(&out)
				w.Write(page)
				w.Close()
			}
			b.ReportMetric(float64(len(page))/float64(out.Len()), "ratio")
		})
	}
}

// BenchmarkDecodeGeneratedBatch is what the strict handler would cost if it
// decoded the body into the generated type (gen.ReadingBatch, a map per
// reading) and the handler turned that into the store's columns: the
// reason the body reaches PostReadings another way (jsonSerializer).
func BenchmarkDecodeGeneratedBatch(b *testing.B) {
	body := benchBatch()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var batch gen.ReadingBatch
		if err := json.UnmarshalRead(bytes.NewReader(body), &batch, json.RejectUnknownMembers(true)); err != nil {
			b.Fatal(err)
		}
		readings := make([]store.Reading, len(batch))
		for i, r := range batch {
			readings[i].Time = r.Datetime
			for key, v := range r.Inputs {
				id, err := parseInputID(key)
				if err != nil {
					b.Fatal(err)
				}
				readings[i].InputIDs = append(readings[i].InputIDs, id)
				readings[i].Values = append(readings[i].Values, v)
			}
			sortInputs(readings[i].InputIDs, readings[i].Values)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/reading")
}

// For BenchmarkPostReadings in package server_test.
var (
	MakeBenchBatch = makeBenchBatch
	ProcessCPU     = processCPU
)

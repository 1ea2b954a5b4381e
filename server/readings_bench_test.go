package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"

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

// BenchmarkDecodeReadingBatch measures what the service does to a POST body
// before the database sees it: decode, check and sort into columns.
func BenchmarkDecodeReadingBatch(b *testing.B) {
	body := benchBatch()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeReadingBatch(bytes.NewReader(body), 10000, 100); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/reading")
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

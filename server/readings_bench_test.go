package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"

	"net/http"
	"net/http/httptest"

	"github.com/labstack/echo/v4"

	"github.com/sensorreadings/readings/batch"
	"github.com/sensorreadings/readings/batch/batchtest"
	"github.com/sensorreadings/readings/gen"
)

// BenchmarkEncodePage measures writing a page of 1,000 readings of 10
// inputs as JSON, and gzipping it as the server does for clients that
// accept it.
func BenchmarkEncodePage(b *testing.B) {
	readings, err := batch.Decode(bytes.NewReader(batchtest.Body()), 10000, 100)
	if err != nil {
		b.Fatal(err)
	}
	var page []byte
	b.Run("JSON", func(b *testing.B) {
		b.ReportAllocs()
		cpu := batchtest.ProcessCPU(b)
		for b.Loop() {
			page = page[:0]
			var e readingEncoder
			e.reset(12, nil)
			for i := range readings {
				page = e.append(page, &readings[i], nil, nil)
			}
		}
		b.SetBytes(int64(len(page)))
		// The process's CPU, which other processes on the machine move
		// less than the wall time: the figure to compare.
		b.ReportMetric(float64((batchtest.ProcessCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/page")
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

// BenchmarkDecodeGeneratedBatch is what the strict handler costs to
// decode a POST body into the generated body type, the way it does:
// Echo's binder, then the server's serializer. That type is
// batch.Readings on the server's side (openapi/server-overlay.yaml), so
// this is BenchmarkDecodeReadingBatch and Echo's share; decoding into the
// spec's own type, a map per reading, and converting it to the store's
// columns cost 1.4 to 2 times the time and 17,014 allocations per 1,000
// readings against 24 (issue 25).
func BenchmarkDecodeGeneratedBatch(b *testing.B) {
	body := batchtest.Body()
	e := echo.New()
	e.JSONSerializer = jsonSerializer{maxBatch: 10000, maxInputs: 100}
	binder := &echo.DefaultBinder{}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		var readings gen.PostReadingsJSONRequestBody
		if err := binder.BindBody(e.NewContext(req, httptest.NewRecorder()), &readings); err != nil {
			b.Fatal(err)
		}
		if len(readings.List) != 1000 {
			b.Fatalf("%d readings, want 1000", len(readings.List))
		}
		readings.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/reading")
}

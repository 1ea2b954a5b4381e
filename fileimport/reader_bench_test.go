package fileimport

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// toa5Bench is a TOA5 file as rows 3f and 4f of the bench post it: a
// CR1000X's header, then lines of a quoted timestamp, the record number and
// ten values with four decimals.
func toa5Bench(lines int) []byte {
	var b bytes.Buffer
	b.WriteString(`"TOA5","bench","CR1000X","1","CR1000X.Std.05","CPU:bench.CR1X","1","Table10"` + "\n")
	b.WriteString(`"TIMESTAMP","RECORD"`)
	for id := 1; id <= 10; id++ {
		fmt.Fprintf(&b, `,"%d"`, id)
	}
	b.WriteString("\n\"TS\",\"RN\"" + `,"","","","","","","","","",""` + "\n" + `"",""` + `,"Smp","Smp","Smp","Smp","Smp","Smp","Smp","Smp","Smp","Smp"` + "\n")
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	line := make([]byte, 0, 256)
	for i := range lines {
		line = append(line[:0], '"')
		line = start.Add(time.Duration(i)*time.Second).AppendFormat(line, "2006-01-02 15:04:05")
		line = append(line, `",`...)
		line = strconv.AppendInt(line, int64(i), 10)
		for range 10 {
			line = append(line, ',')
			line = strconv.AppendFloat(line, rng.Float64()*2000-1000, 'f', 4, 64)
		}
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

// BenchmarkReadTOA5 reads the file of rows 3f and 4f, 10,000 lines of ten
// inputs, a reading at a time: the parse that runs beside PostgreSQL's COPY.
func BenchmarkReadTOA5(b *testing.B) {
	const lines = 10_000
	file := toa5Bench(lines)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := NewReader(bytes.NewReader(file), Options{Loc: time.UTC})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			r, err := p.Next()
			if err != nil {
				b.Fatal(err)
			}
			if r == nil {
				break
			}
			n++
		}
		if n != lines {
			b.Fatalf("%d readings, want %d", n, lines)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
}

package server

import (
	"github.com/sensorreadings/readings/datetime"

	"bytes"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sensorreadings/readings/sensing"
	"github.com/sensorreadings/readings/store"
)

// readingsPage is a page of readings encoded as JSON while the rows arrive,
// or, asked for CSV, kept until the page is whole, since the header row
// names every input the page has.
type readingsPage struct {
	buf      *bytes.Buffer
	sensorID int64
	outputs  *sensing.Outputs // nil unless outputs=true
	names    keyNames
	byName   bool            // names values by key
	csv      []store.Reading // nil for JSON
	wantsCSV bool
	count    int
	last     time.Time // of the last reading added
	link     string
}

var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func newReadingsPage(sensorID int64, byName, wantsCSV bool) *readingsPage {
	buf := pageBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	if !wantsCSV {
		buf.WriteByte('[')
	}
	return &readingsPage{buf: buf, sensorID: sensorID, byName: byName, wantsCSV: wantsCSV}
}

// Sensor implements sensing.ReadingSink: the page names the sensor's
// values as keys asks, and lists its outputs when they are asked for.
func (p *readingsPage) Sensor(sensor store.Sensor, outputs *sensing.Outputs) error {
	p.names, p.outputs = sensorNames(sensor, p.byName), outputs
	return nil
}

// Reading implements sensing.ReadingSink.
func (p *readingsPage) Reading(r *store.Reading, outputs *sensing.Outputs) error {
	if outputs != nil {
		p.outputs = outputs
	}
	p.add(r)
	p.last = r.Time
	return nil
}

// add appends one reading.
func (p *readingsPage) add(r *store.Reading) {
	if p.wantsCSV {
		p.csv = append(p.csv, store.Reading{Time: r.Time, InputIDs: slices.Clone(r.InputIDs), Values: slices.Clone(r.Values)})
		p.count++
		return
	}
	if p.count > 0 {
		p.buf.WriteByte(',')
	}
	p.buf.Write(appendReading(p.buf.AvailableBuffer(), p.sensorID, r, p.outputs, p.names))
	p.count++
}

func (p *readingsPage) finish(link string) *readingsPage {
	p.link = link
	if !p.wantsCSV {
		p.buf.WriteString("]\n")
		return p
	}
	columns := csvColumns{inputIDs: inputIDsOf(p.csv), outputs: p.outputs, names: p.names}
	p.buf.Write(columns.appendHeader(p.buf.AvailableBuffer()))
	for i := range p.csv {
		p.buf.Write(columns.appendRow(p.buf.AvailableBuffer(), &p.csv[i]))
	}
	return p
}

func (p *readingsPage) release() {
	if p.buf.Cap() <= 4<<20 {
		pageBuffers.Put(p.buf)
	}
	p.buf = nil
}

func (p *readingsPage) VisitListReadingsResponse(w http.ResponseWriter) error {
	defer p.release()
	if p.wantsCSV {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	if p.link != "" {
		w.Header().Set("Link", p.link)
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(p.buf.Bytes())
	return err
}

// appendReading appends r as JSON, with its outputs unless outputs is nil,
// its values named by names:
// {"id":"12-1714564800000000","datetime":"…","inputs":{"101":2803.5},"outputs":{…}}
func appendReading(b []byte, sensorID int64, r *store.Reading, outputs *sensing.Outputs, names keyNames) []byte {
	b = append(b, `{"id":"`...)
	b = strconv.AppendInt(b, sensorID, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, r.Time.UnixMicro(), 10)
	b = append(b, `","datetime":"`...)
	b = datetime.Append(b, r.Time)
	b = append(b, `","inputs":{`...)
	for i, id := range r.InputIDs {
		if i > 0 {
			b = append(b, ',')
		}
		b = names.appendKey(b, id)
		b = append(b, ':')
		b = appendNumber(b, r.Values[i])
	}
	b = append(b, '}')
	if outputs != nil {
		b = appendOutputs(b, outputs, r, names)
	}
	return append(b, '}')
}

// appendOutputs computes r's outputs and appends ,"outputs":{…}, named
// by names.
func appendOutputs(b []byte, outputs *sensing.Outputs, r *store.Reading, names keyNames) []byte {
	outputs.Compute(r)
	b = append(b, `,"outputs":{`...)
	first := true
	for k, id := range outputs.IDs() {
		v, ok := outputs.Value(k)
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = names.appendKey(b, id)
		b = append(b, ':')
		b = appendNumber(b, v)
	}
	return append(b, '}')
}

// appendNumber appends f as encoding/json writes a float64 (the ES6
// shortest form): exponents only below 1e-6 and from 1e21.
func appendNumber(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

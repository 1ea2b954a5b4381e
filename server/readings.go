package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/gen"
	"github.com/sensorreadings/readings/store"
)

// The defaults of the readings GET's parameters, as the spec states them.
const defaultReadingsLimit = 1000

// PostReadings stores a batch of readings, all or none. The body was
// checked and decoded while it streamed in (decodeReadingBatch).
func (s *Server) PostReadings(ctx context.Context, req gen.PostReadingsRequestObject) (gen.PostReadingsResponseObject, error) {
	if req.Body != nil {
		return s.postFile(ctx, req)
	}
	if p := req.Params; p.Tz != nil || p.Dst != nil || p.DryRun != nil {
		return nil, apperr.Errorf(apperr.Invalid, "tz, dst and dry_run apply to files (text/csv) only")
	}
	readings := batchOf(ctx)
	if len(readings) == 0 {
		return nil, apperr.Errorf(apperr.Invalid, "the body must be a non-empty JSON array of readings")
	}
	if err := s.refuseFuture(readings, func(i int) (string, map[string]any) {
		return fmt.Sprintf("element %d", i), map[string]any{"index": i}
	}); err != nil {
		return nil, err
	}
	if _, err := s.store.InsertReadings(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), readings); err != nil {
		return nil, err
	}
	s.metrics.ingested.Add(float64(len(readings)))
	ok := gen.PostReadings200JSONResponse{Headers: gen.PostReadings200ResponseHeaders{XReadingsLSN: s.writePosition(ctx)}}
	if err := ok.Body.FromPostReadings200JSONResponseBody0(gen.OK); err != nil {
		return nil, err
	}
	return ok, nil
}

// refuseFuture refuses readings dated more than MaxFuture after the
// server's clock: a logger whose clock is wrong is the commonest bad data in
// the field, and a reading from next year would stand as the sensor's latest
// until then. where names the i-th reading and gives the error's details.
func (s *Server) refuseFuture(readings []store.Reading, where func(i int) (string, map[string]any)) error {
	if s.cfg.MaxFuture == 0 {
		return nil
	}
	now := time.Now()
	limit := now.Add(s.cfg.MaxFuture)
	for i := range readings {
		if readings[i].Time.After(limit) {
			name, details := where(i)
			return &apperr.Error{Code: apperr.Invalid, Details: details, Message: fmt.Sprintf(
				"%s: datetime %s is more than %s after the server's clock (%s); check the clock of the device that sent it",
				name, formatExact(readings[i].Time), shortDuration(s.cfg.MaxFuture), now.UTC().Format(time.RFC3339))}
		}
	}
	return nil
}

// shortDuration writes 24h rather than 24h0m0s.
func shortDuration(d time.Duration) string {
	text := d.String()
	if strings.HasSuffix(text, "m0s") {
		text = strings.TrimSuffix(text, "0s")
	}
	if strings.HasSuffix(text, "h0m") {
		text = strings.TrimSuffix(text, "0m")
	}
	return text
}

// ListReadings returns a page of a sensor's readings. The page is encoded
// straight from the rows as they arrive, without building a value per
// reading; the Link to the next page is known once the page is full.
func (s *Server) ListReadings(ctx context.Context, req gen.ListReadingsRequestObject) (gen.ListReadingsResponseObject, error) {
	key := sensorKey(req.OrgId, req.ProjId, req.SensorId)
	q, err := readingQuery(req.Params)
	if err != nil {
		return nil, err
	}
	sensor, err := s.store.GetSensor(ctx, key)
	if err != nil {
		return nil, err
	}
	page := newReadingsPage(sensor.ID, prefersCSV(ctx))
	page.names = newKeyNames(sensor, req.Params.Keys)
	if p := req.Params.Outputs; p != nil && *p {
		page.outputs = s.newOutputsWriter(sensor)
	}
	var last time.Time
	if q.From.After(q.To) {
		return page.finish(""), nil
	}
	err = s.reader(ctx).ListReadings(ctx, sensor, q, func(r *store.Reading) error {
		page.add(r)
		last = r.Time
		return nil
	})
	if err != nil {
		page.release()
		return nil, err
	}
	next := ""
	if page.count == q.Limit {
		next = nextPageLink(key, req.Params, last)
	}
	return page.finish(next), nil
}

// DeleteReadings deletes a sensor's readings in a range.
func (s *Server) DeleteReadings(ctx context.Context, req gen.DeleteReadingsRequestObject) (gen.DeleteReadingsResponseObject, error) {
	from, to, err := boundedRange(req.Params.DatetimeGte, req.Params.DatetimeLt)
	if err != nil {
		return nil, err
	}
	deleted, err := s.store.DeleteReadings(ctx, sensorKey(req.OrgId, req.ProjId, req.SensorId), from, to.Add(time.Microsecond))
	if err != nil {
		return nil, err
	}
	return gen.DeleteReadings200JSONResponse{Body: gen.Deleted{Deleted: deleted},
		Headers: gen.DeleteReadings200ResponseHeaders{XReadingsLSN: s.writePosition(ctx)}}, nil
}

// readingQuery turns the parameters into the store's query.
func readingQuery(p gen.ListReadingsParams) (store.ReadingQuery, error) {
	q := store.ReadingQuery{Limit: defaultReadingsLimit}
	var err error
	if q.From, q.To, err = timeRange(p.DatetimeGte, p.DatetimeGt, p.DatetimeLte, p.DatetimeLt); err != nil {
		return q, err
	}
	if p.Limit != nil {
		q.Limit = *p.Limit
	}
	if p.Offset != nil {
		q.Offset = *p.Offset
	}
	q.Desc = p.Order != nil && *p.Order == gen.Desc
	return q, nil
}

// timeRange turns a request's datetime bounds (datetime__gte, __gt, __lte,
// __lt; nil where not given) into the one form every read and delete of
// readings uses: inclusive instants to the microsecond, from after to when
// the bounds select nothing. Readings are stored to the microsecond, so
// "after t" is "at or after t's next microsecond", which lets one SQL
// statement serve every combination of bounds.
func timeRange(gte, gt, lte, lt *gen.Bound) (from, to time.Time, err error) {
	from, to = store.MinTime, store.MaxTime
	var bounds [4]time.Time
	for i, b := range []*gen.Bound{gte, gt, lte, lt} {
		if b == nil {
			continue
		}
		if bounds[i], err = parseBound(*b); err != nil {
			name := [...]string{"datetime__gte", "datetime__gt", "datetime__lte", "datetime__lt"}[i]
			return from, to, &apperr.Error{Code: apperr.Invalid, Message: fmt.Sprintf("%s: %v", name, err),
				Details: map[string]any{"parameter": name}}
		}
	}
	if gte != nil {
		from = later(from, ceilMicro(bounds[0]))
	}
	if gt != nil {
		from = later(from, bounds[1].Truncate(time.Microsecond).Add(time.Microsecond))
	}
	if lte != nil {
		to = earlier(to, bounds[2].Truncate(time.Microsecond))
	}
	if lt != nil {
		to = earlier(to, ceilMicro(bounds[3]).Add(-time.Microsecond))
	}
	return from, to, nil
}

// parseBound reads a bound as RFC 3339 with a zone (nanoseconds allowed,
// as before bounds took milliseconds) or as milliseconds since the epoch,
// the form Grafana's ${__from} and ${__timeFrom} give.
func parseBound(b gen.Bound) (time.Time, error) {
	if ms, err := strconv.ParseInt(b, 10, 64); err == nil {
		t := time.UnixMilli(ms).UTC()
		if t.Before(store.MinTime) || t.After(store.MaxTime) {
			return t, fmt.Errorf("%s milliseconds is outside 0001-01-01 to 9999-12-31", b)
		}
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, b)
	if err != nil {
		return t, fmt.Errorf("%q is neither RFC 3339 with a zone, such as 2024-05-01T00:00:00Z, nor epoch milliseconds", b)
	}
	return t, nil
}

// boundedRange is timeRange of the two bounds that operations on a range
// (aggregates, range deletes) require, and Invalid when they select
// nothing.
func boundedRange(gte, lt gen.Bound) (from, to time.Time, err error) {
	if from, to, err = timeRange(&gte, nil, nil, &lt); err != nil {
		return from, to, err
	}
	if from.After(to) {
		return from, to, apperr.Errorf(apperr.Invalid, "datetime__lt must be after datetime__gte")
	}
	return from, to, nil
}

func ceilMicro(t time.Time) time.Time {
	if f := t.Truncate(time.Microsecond); !f.Equal(t) {
		return f.Add(time.Microsecond)
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// nextPageLink is the Link header of a full page: the same query from just
// past the last reading, without offset, which applied to the first page.
func nextPageLink(key store.SensorKey, p gen.ListReadingsParams, last time.Time) string {
	exact := formatExact(last)
	if p.Order != nil && *p.Order == gen.Desc {
		p.DatetimeLt = &exact
	} else {
		p.DatetimeGt = &exact
	}
	v := url.Values{}
	for name, b := range map[string]*gen.Bound{
		"datetime__gte": p.DatetimeGte, "datetime__gt": p.DatetimeGt,
		"datetime__lte": p.DatetimeLte, "datetime__lt": p.DatetimeLt,
	} {
		if b != nil {
			v.Set(name, *b)
		}
	}
	if p.Limit != nil {
		v.Set("limit", strconv.Itoa(*p.Limit))
	}
	if p.Order != nil {
		v.Set("order", string(*p.Order))
	}
	if p.Outputs != nil {
		v.Set("outputs", strconv.FormatBool(*p.Outputs))
	}
	if p.Keys != nil {
		v.Set("keys", string(*p.Keys))
	}
	return fmt.Sprintf(`</api/v1/org/%d/proj/%d/readings/%d?%s>; rel="next"`,
		key.OrgID, key.ProjectID, key.SensorID, v.Encode())
}

// readingsPage is a page of readings encoded as JSON while the rows arrive,
// or, asked for CSV, kept until the page is whole, since the header row
// names every input the page has.
type readingsPage struct {
	buf      *bytes.Buffer
	sensorID int64
	outputs  *outputsWriter // nil unless outputs=true
	names    keyNames
	csv      []store.Reading // nil for JSON
	wantsCSV bool
	count    int
	link     string
}

var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func newReadingsPage(sensorID int64, wantsCSV bool) *readingsPage {
	buf := pageBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	if !wantsCSV {
		buf.WriteByte('[')
	}
	return &readingsPage{buf: buf, sensorID: sensorID, wantsCSV: wantsCSV}
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
func appendReading(b []byte, sensorID int64, r *store.Reading, outputs *outputsWriter, names keyNames) []byte {
	b = append(b, `{"id":"`...)
	b = strconv.AppendInt(b, sensorID, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, r.Time.UnixMicro(), 10)
	b = append(b, `","datetime":"`...)
	b = appendDatetime(b, r.Time)
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
		b = outputs.appendOutputs(b, r, names)
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

// maxLongSensors is how many sensors listProjectReadings reads at once.
const maxLongSensors = 20

// ListProjectReadings returns the readings of several sensors of a project
// as one row per value, sensor by sensor, for charts of several sensors.
// The cursor is the last reading's sensor id and microsecond.
func (s *Server) ListProjectReadings(ctx context.Context, req gen.ListProjectReadingsRequestObject) (gen.ListProjectReadingsResponseObject, error) {
	p := req.Params
	from, to, err := timeRange(p.DatetimeGte, nil, nil, p.DatetimeLt)
	if err != nil {
		return nil, err
	}
	sensors, err := s.longSensors(ctx, req.OrgId, req.ProjId, p.Sensors)
	if err != nil {
		return nil, err
	}
	limit := defaultReadingsLimit
	if p.Limit != nil {
		limit = *p.Limit
	}
	var afterSensor int64
	var afterTime time.Time
	if p.Cursor != nil {
		id, micro, _ := strings.Cut(*p.Cursor, "_")
		afterSensor, _ = strconv.ParseInt(id, 10, 64)
		m, err := strconv.ParseInt(micro, 10, 64)
		if err != nil || afterSensor == 0 {
			return nil, apperr.Errorf(apperr.Invalid, "cursor %q is not one this service gave; pass next_cursor as it came", *p.Cursor)
		}
		afterTime = time.UnixMicro(m)
	}
	b := []byte(`{"items":[`)
	first, n, next := true, 0, ""
	for _, sensor := range sensors {
		if sensor.ID < afterSensor {
			continue
		}
		q := store.ReadingQuery{From: from, To: to, Limit: limit - n}
		if sensor.ID == afterSensor {
			q.From = later(from, afterTime.Add(time.Microsecond))
		}
		if q.From.After(q.To) {
			continue
		}
		name, err := json.Marshal(sensor.Name)
		if err != nil {
			return nil, fmt.Errorf("encode sensor name: %w", err)
		}
		names := newKeyNames(sensor, p.Keys)
		var outputs *outputsWriter
		if p.Outputs != nil && *p.Outputs {
			outputs = s.newOutputsWriter(sensor)
		}
		row := func(r *store.Reading, id int64, v float64) {
			key := names.appendKey(nil, id)
			if p.Key != nil && string(key[1:len(key)-1]) != *p.Key {
				return
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, `{"sensor_id":`...)
			b = strconv.AppendInt(b, sensor.ID, 10)
			b = append(b, `,"sensor":`...)
			b = append(b, name...)
			b = append(b, `,"datetime":"`...)
			b = appendDatetime(b, r.Time)
			b = append(b, `","key":`...)
			b = append(b, key...)
			b = append(b, `,"value":`...)
			b = appendNumber(b, v)
			b = append(b, '}')
		}
		var last time.Time
		count := 0
		err = s.reader(ctx).ListReadings(ctx, sensor, q, func(r *store.Reading) error {
			for i, id := range r.InputIDs {
				row(r, id, r.Values[i])
			}
			if outputs != nil {
				outputs.Compute(r)
				for k, id := range outputs.outputIDs {
					if v, ok := outputs.Value(k); ok {
						row(r, id, v)
					}
				}
			}
			count++
			last = r.Time
			return nil
		})
		if err != nil {
			return nil, err
		}
		if n += count; n == limit {
			next = fmt.Sprintf("%d_%d", sensor.ID, last.UnixMicro())
			break
		}
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"next_cursor":`...)
		b = strconv.AppendQuote(b, next)
	}
	return jsonBody(append(b, "}\n"...)), nil
}

// longSensors is the sensors named (ascending, each checked to be in the
// project), or without names every sensor of the project, at most
// maxLongSensors of them either way.
func (s *Server) longSensors(ctx context.Context, orgID, projectID int64, list *string) ([]store.Sensor, error) {
	if list == nil {
		sensors, more, err := s.store.ListSensors(ctx, orgID, projectID, 0, maxLongSensors)
		if err != nil {
			return nil, err
		}
		if more {
			return nil, apperr.Errorf(apperr.Invalid, "the project has more than %d sensors: name at most %d in sensors", maxLongSensors, maxLongSensors)
		}
		return sensors, nil
	}
	var ids []int64
	for _, field := range strings.Split(*list, ",") {
		id, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return nil, apperr.Errorf(apperr.Invalid, "sensors: %q is not a sensor id", field)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	sensors := make([]store.Sensor, len(ids))
	for i, id := range ids {
		var err error
		if sensors[i], err = s.store.GetSensor(ctx, sensorKey(orgID, projectID, id)); err != nil {
			return nil, err
		}
	}
	return sensors, nil
}

func (j jsonBody) VisitListProjectReadingsResponse(w http.ResponseWriter) error { return j.write(w) }

package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// pageLinksSQL is the statement of a page's links (PageRead.Links), by
// whether the links are given (LinksOf) or the sensor's row gives them,
// order, whether the rejected readings are left out, and whether the
// spacing of the page's readings is given (PageRead.LinksSpacing).
var pageLinksSQL = func() (sql [2][2][2][2]string) {
	for given := range 2 {
		for order, by := range []string{"", " DESC"} {
			for unrejected := range 2 {
				for spaced := range 2 {
					sql[given][order][unrejected][spaced] = pageLinks(given == 1, by, unrejected == 1, spaced == 1)
				}
			}
		}
	}
	return sql
}()

// pageLinks is the statement of the readings of each link's source that
// serve a page: the page's first and last instants found again, without
// its rows, through the index (when the sensor has links at all), then,
// for each link, its source (whose instance it gives unless the caller
// knows that version of it, PageRead.KnownSources) and what
// listLinkReadingsSQL reads over them, at most $9 readings; or, spaced,
// the page's first instant (its last, in descending order), which a probe
// of the index finds rather than a walk, and the limit's readings at the
// spacing given from it. The probe's LIMIT is a constant, not the page's:
// a generic plan that could not tell it is 1 would cost more than a
// custom one, and PostgreSQL would plan the statement again at each call
// (1 ms). A link whose source is not found has no row; one whose source
// has no reading to give, a row of nulls after its query. A link whose
// source has a flag in force that rejects one of the values it may read
// there (a whole reading; or the input it takes; or, for an output, any
// input) has rejecting set and a row of nulls: the statement does not
// leave them out, so the caller reads that link as any read does
// (sensing's linkSamples). The check is part of the statement, in the
// snapshot of the readings it would serve, so no flag set since a hint
// was taken can slip past it; it is made once per link, with its source.
// Its parameters are the page statement's first seven, the earliest
// instant ($8) and the bound ($9), the links when given ($10 to $13:
// inputs' indexes, sources, keys, staleness in nanoseconds), the instant
// of the flags in force (nil: now), the sources' versions known (ids,
// then versions), and the spacing when spaced.
func pageLinks(given bool, order string, unrejected, spaced bool) string {
	links := `SELECT (x.n - 1)::int AS input, (x.i->'link'->>'sensor_id')::bigint AS source_id,
           x.i->'link'->>'key' AS key, (x.i->'link'->>'staleness')::bigint AS staleness
    FROM sensors d, jsonb_array_elements(d.instance->'inputs') WITH ORDINALITY AS x(i, n)
    WHERE d.id = $1 AND d.project_id = $6 AND jsonb_typeof(x.i->'link') = 'object'`
	asOf := 10
	if given {
		links = `SELECT * FROM unnest($10::int[], $11::bigint[], $12::text[], $13::bigint[]) AS l(input, source_id, key, staleness)`
		asOf = 14
	}
	with, without, spacing := "", "", asOf+3
	if unrejected {
		with, without = rejectedCTE(asOf)+",\n", withoutRejected
	}
	page := `SELECT datetime FROM readings
        WHERE sensor_id = $1 AND datetime BETWEEN $2 AND $3 AND ` + fmt.Sprintf(sensorOfKeySQL, 6, 7) + without + `
          AND EXISTS (SELECT FROM links)
        ORDER BY datetime` + order
	bounds := `SELECT min(datetime) AS first, max(datetime) AS last FROM (
        ` + page + ` LIMIT $4 OFFSET $5) page`
	switch {
	case spaced && order == "":
		bounds = fmt.Sprintf(`SELECT datetime AS first, least(datetime + $%d::interval * ($4 - 1), $3) AS last FROM (
        `+page+` LIMIT 1 OFFSET $5) page`, spacing)
	case spaced:
		bounds = fmt.Sprintf(`SELECT greatest(datetime - $%d::interval * ($4 - 1), $2) AS first, datetime AS last FROM (
        `+page+` LIMIT 1 OFFSET $5) page`, spacing)
	}
	return `WITH ` + with + `links AS MATERIALIZED (
    ` + links + `),
bounds AS MATERIALIZED (
    ` + bounds + `),
sources AS MATERIALIZED (
    SELECT l.input, l.source_id, b.first, b.last,
           greatest(b.first - interval '1 microsecond' * ((l.staleness + 999) / 1000), $8) AS since,
           coalesce((SELECT (x.i->>'id')::bigint FROM jsonb_array_elements(s.instance->'inputs') WITH ORDINALITY AS x(i, n)
                     WHERE x.i->>'key' = l.key ORDER BY x.n LIMIT 1), 0) AS input_id,
           s.instance, EXISTS (SELECT FROM unnest($` + fmt.Sprint(asOf+1) + `::bigint[], $` + fmt.Sprint(asOf+2) + `::bigint[]) v(id, version)
               WHERE v.id = l.source_id AND v.version = (s.instance->>'version')::bigint) AS known
    FROM links l JOIN sensors s ON s.id = l.source_id AND s.project_id = $6 CROSS JOIN bounds b
    WHERE b.first IS NOT NULL),
checked AS MATERIALIZED (
    SELECT k.*, EXISTS (SELECT FROM reading_flags f
        WHERE f.sensor_id = k.source_id AND f.flag = 'rejected' AND f.from_at <= k.last AND f.to_at >= k.since
          AND (f.input_id IS NULL OR k.input_id = 0 OR f.input_id = k.input_id)
          AND ` + fmt.Sprintf(flagInForceSQL, asOf) + `) AS rejecting
    FROM sources k)
SELECT k.input, k.source_id, k.input_id, k.since, k.first, k.last, k.rejecting, k.known, CASE WHEN k.known THEN NULL ELSE k.instance END,
       r.datetime, r.input_ids, r.vals
FROM checked k LEFT JOIN LATERAL (
    SELECT datetime, input_ids, vals FROM readings
    WHERE NOT k.rejecting AND sensor_id = k.source_id AND datetime BETWEEN coalesce((
        SELECT datetime FROM readings
        WHERE sensor_id = k.source_id AND datetime BETWEEN k.since AND k.first AND (k.input_id = 0 OR k.input_id = ANY(input_ids))
        ORDER BY datetime DESC LIMIT 1), k.first) AND k.last
    ORDER BY datetime LIMIT $9) r ON true`
}

// queuePageLinks queues the statement of r.Links after those of the
// page's head; args, order and unrejected are the page statement's, so
// that the links serve the readings it reads.
func queuePageLinks(b *pgx.Batch, r PageRead, args []any, order, unrejected int) {
	given := 0
	largs := append(slices.Clip(args[:7]), MinTime, r.LinkReadings+1)
	if !r.Lookup {
		given = 1
		var (
			inputs    []int32
			sources   []int64
			keys      []string
			staleness []int64
		)
		if r.LinksOf != nil {
			for i, in := range r.LinksOf.Inputs {
				if l := in.Link; l != nil {
					inputs, sources = append(inputs, int32(i)), append(sources, l.SensorID)
					keys, staleness = append(keys, l.Key), append(staleness, int64(l.Staleness))
				}
			}
		}
		largs = append(largs, inputs, sources, keys, staleness)
	}
	known, versions := make([]int64, 0, len(r.KnownSources)), make([]int64, 0, len(r.KnownSources))
	for id, version := range r.KnownSources {
		known, versions = append(known, id), append(versions, version)
	}
	largs = append(largs, r.AsOf, known, versions)
	spaced := 0
	// Within a time.Duration (292 years), the span stays within
	// PostgreSQL's datetimes from any reading's.
	if r.LinksSpacing > 0 && r.LinksSpacing <= math.MaxInt64/time.Duration(max(r.Query.Limit, 1)) {
		spaced = 1
		largs = append(largs, r.LinksSpacing)
	}
	b.Queue(pageLinksSQL[given][order][unrejected][spaced], largs...)
}

// readPageLinks reads the result of queuePageLinks' statement, each
// link's readings at most max.
func readPageLinks(br pgx.BatchResults, max int) (LinkedPage, error) {
	var p LinkedPage
	rows, _ := br.Query()
	if err := scanPageLinks(rows, max, &p); err != nil {
		return p, readError("page links", err)
	}
	return p, nil
}

// scanPageLinks reads pageLinks' rows into p.Links, their readings'
// arrays in two backing arrays rather than two of their own each. The
// rows of a link come together and in time order as the statement's plan
// gives them; should a plan not, the link is left incomplete.
func scanPageLinks(rows pgx.Rows, max int, p *LinkedPage) error {
	defer rows.Close()
	// The instance, jsonb, comes as text, pgx's choice for jsonb; the
	// other columns in binary.
	binaryRows := binaryColumns(rows, 12, 8)
	jsonbBinary := binaryRows && rows.FieldDescriptions()[8].Format == pgtype.BinaryFormatCode
	type span struct{ ids, vals [2]int }
	var (
		r      Reading
		ids    []int64
		vals   []float64
		spans  []span
		times  []time.Time
		counts []int // readings of each link
		// A row's columns, reset for each row: declared in the loop,
		// rows.Scan's pointers moved them to the heap row by row (three
		// allocations a row, some sixty a page).
		l         PageLink
		at        *time.Time
		rejecting bool
		inst      []byte // the source's instance, as JSON
	)
	for rows.Next() {
		l, at, rejecting, inst = PageLink{}, nil, false, nil
		if binaryRows {
			raw := rows.RawValues()
			var err error
			if inst, err = decodePageLink(raw, jsonbBinary, &l, &rejecting); err != nil {
				return err
			}
			if raw[9] != nil {
				if err := decodeReading(raw[9:], &r, nil, false); err != nil {
					return err
				}
				at = &r.Time
			}
		} else {
			var rIDs []int64
			var rVals []float64
			if err := rows.Scan(&l.Input, &l.SensorID, &l.Query.InputID, &l.Query.From, &l.Query.First, &l.Query.To, &rejecting, &l.Known, &inst, &at, &rIDs, &rVals); err != nil {
				return err
			}
			if at != nil {
				r = Reading{Time: *at, InputIDs: rIDs, Values: rVals}
			}
		}
		n := len(p.Links)
		if n == 0 || p.Links[n-1].Input != l.Input || p.Links[n-1].SensorID != l.SensorID {
			l.Complete = !rejecting
			if inst != nil {
				l.Source = new(Instance)
				if err := json.Unmarshal(inst, l.Source); err != nil {
					return fmt.Errorf("a source's instance: %w", err)
				}
			}
			for i := range p.Links {
				if p.Links[i].Input == l.Input { // not together: neither serves
					p.Links[i].Complete, l.Complete = false, false
				}
			}
			p.Links = append(p.Links, l)
			counts = append(counts, 0)
			n++
		}
		link := &p.Links[n-1]
		if at == nil || !link.Complete {
			continue
		}
		if counts[n-1] == max || (counts[n-1] > 0 && !times[len(times)-1].Before(r.Time)) {
			link.Complete = false
			continue
		}
		s := span{ids: [2]int{len(ids), len(ids) + len(r.InputIDs)}, vals: [2]int{len(vals), len(vals) + len(r.Values)}}
		if k := len(spans); k > 0 && counts[n-1] > 0 && slices.Equal(ids[spans[k-1].ids[0]:spans[k-1].ids[1]], r.InputIDs) {
			s.ids = spans[k-1].ids // the same inputs as the reading before: shared
		} else {
			ids = append(ids, r.InputIDs...)
		}
		if vals == nil {
			// Room for pageLinkRows readings (row 12's barometer gives
			// a page about twenty): one allocation each, where append
			// grew them from nothing five or six times.
			vals, spans, times = make([]float64, 0, pageLinkRows*len(r.Values)), make([]span, 0, pageLinkRows), make([]time.Time, 0, pageLinkRows)
		}
		vals = append(vals, r.Values...)
		spans, times = append(spans, s), append(times, r.Time)
		counts[n-1]++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	readings := make([]Reading, len(spans))
	for i, s := range spans {
		readings[i] = Reading{Time: times[i], InputIDs: ids[s.ids[0]:s.ids[1]:s.ids[1]], Values: vals[s.vals[0]:s.vals[1]:s.vals[1]]}
	}
	for i := range p.Links {
		p.Links[i].Readings, readings = readings[:counts[i]:counts[i]], readings[counts[i]:]
	}
	return nil
}

// pageLinkRows is the readings of links' sources scanPageLinks makes
// room for at first.
const pageLinkRows = 64

// decodePageLink decodes the link's columns of a row of pageLinks from
// PostgreSQL's binary format, but for the source's instance, in binary
// when jsonbBinary, else as text, whose JSON it returns (nil: none).
func decodePageLink(raw [][]byte, jsonbBinary bool, l *PageLink, rejecting *bool) ([]byte, error) {
	if len(raw[0]) != 4 || len(raw[1]) != 8 || len(raw[2]) != 8 || len(raw[6]) != 1 || len(raw[7]) != 1 {
		return nil, fmt.Errorf("page links: a link's ids of %d, %d and %d bytes, its rejecting of %d, known of %d", len(raw[0]), len(raw[1]), len(raw[2]), len(raw[6]), len(raw[7]))
	}
	*rejecting, l.Known = raw[6][0] != 0, raw[7][0] != 0
	inst := raw[8]
	if inst != nil && jsonbBinary {
		// jsonb's binary format: a version byte, 1, then the text.
		if len(inst) == 0 || inst[0] != 1 {
			return nil, errors.New("page links: a source's instance of an unknown jsonb format")
		}
		inst = inst[1:]
	}
	l.Input = int(int32(binary.BigEndian.Uint32(raw[0])))
	l.SensorID = int64(binary.BigEndian.Uint64(raw[1]))
	l.Query.InputID = int64(binary.BigEndian.Uint64(raw[2]))
	var err error
	for i, t := range []*time.Time{&l.Query.From, &l.Query.First, &l.Query.To} {
		if *t, err = decodeTimestamptz(raw[3+i]); err != nil {
			return nil, fmt.Errorf("page links: %w", err)
		}
	}
	return inst, nil
}

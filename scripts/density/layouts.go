package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// layout is a way to store the readings, on its own scratch hypertable.
type layout struct {
	name, what string
	table      string
	create     []string // the statements that make the table (and its side tables), empty
	// count is a query of the readings the table holds, and of those
	// malformed (values not 10 a reading, instants out of order or
	// outside their span), which must be none.
	count string
	// write stores span sp of the data set on conn; overwrite says that
	// its readings are stored already and are to be replaced.
	write func(ctx context.Context, conn *pgx.Conn, d *dataset, sp span, overwrite bool) error
	// readPage reads the sensor's 1,000 readings from `from` on, as a page
	// does, and returns how many it read.
	readPage func(ctx context.Context, conn *pgx.Conn, sensor int64, from time.Time) (int, error)
}

// hypertable makes table a hypertable as migration 00003 makes readings
// (7-day chunks, no default index, compression by sensor in time order;
// no policy: nothing here is a month old).
func hypertable(table, timeCol string) []string {
	return []string{
		fmt.Sprintf(`SELECT create_hypertable('%s', '%s', chunk_time_interval => INTERVAL '7 days', create_default_indexes => false)`, table, timeCol),
		fmt.Sprintf(`ALTER TABLE %s SET (timescaledb.compress, timescaledb.compress_segmentby = 'sensor_id', timescaledb.compress_orderby = '%s')`, table, timeCol),
	}
}

// layoutNamed returns the layout of a name: a, b, c, or d<seconds> (one row
// per sensor and span of that many seconds, d60 a minute).
func layoutNamed(name string) (layout, error) {
	switch {
	case name == "a":
		return rowLayout("a", "as now: (sensor_id, datetime, input_ids bigint[], vals float8[])",
			`CREATE TABLE dense_a (sensor_id bigint NOT NULL, datetime timestamptz NOT NULL, input_ids bigint[] NOT NULL, vals float8[] NOT NULL,
			  PRIMARY KEY (sensor_id, datetime), CHECK (cardinality(input_ids) = cardinality(vals) AND cardinality(input_ids) > 0))`,
			"input_ids",
			func(c *copyBuf, d *dataset) { c.ids(d.inputIDs) },
			`SELECT datetime, input_ids, vals FROM dense_a WHERE sensor_id = $1 AND datetime >= $2 ORDER BY datetime LIMIT 1000`), nil
	case name == "b":
		l := rowLayout("b", "ids out of the row: (sensor_id, datetime, set_id int, vals float8[]), the id sets in a side table",
			`CREATE TABLE dense_b (sensor_id bigint NOT NULL, datetime timestamptz NOT NULL, set_id int NOT NULL, vals float8[] NOT NULL,
			  PRIMARY KEY (sensor_id, datetime), CHECK (cardinality(vals) > 0))`,
			"set_id",
			func(c *copyBuf, _ *dataset) { c.int4(1) },
			`SELECT r.datetime, s.input_ids, r.vals FROM dense_b r JOIN dense_b_sets s ON s.set_id = r.set_id
			 WHERE r.sensor_id = $1 AND r.datetime >= $2 ORDER BY r.datetime LIMIT 1000`)
		l.create = append([]string{
			`CREATE TABLE dense_b_sets (set_id int PRIMARY KEY, input_ids bigint[] NOT NULL UNIQUE)`,
			`INSERT INTO dense_b_sets VALUES (1, '{1,2,3,4,5,6,7,8,9,10}')`,
		}, l.create...)
		return l, nil
	case name == "c":
		l := rowLayout("c", "vals only: input_ids NULL when the sensor's fixed set (a side row a sensor), else the ids",
			`CREATE TABLE dense_c (sensor_id bigint NOT NULL, datetime timestamptz NOT NULL, input_ids bigint[], vals float8[] NOT NULL,
			  PRIMARY KEY (sensor_id, datetime), CHECK (cardinality(vals) > 0 AND (input_ids IS NULL OR cardinality(input_ids) = cardinality(vals))))`,
			"input_ids",
			func(c *copyBuf, _ *dataset) { c.null() },
			`SELECT r.datetime, coalesce(r.input_ids, s.input_ids), r.vals FROM dense_c r, (SELECT input_ids FROM dense_c_ids WHERE sensor_id = $1) s
			 WHERE r.sensor_id = $1 AND r.datetime >= $2 ORDER BY r.datetime LIMIT 1000`)
		l.create = append([]string{
			`CREATE TABLE dense_c_ids (sensor_id bigint PRIMARY KEY, input_ids bigint[] NOT NULL)`,
			`INSERT INTO dense_c_ids SELECT s, '{1,2,3,4,5,6,7,8,9,10}' FROM generate_series(1, 100000) s`,
		}, l.create...)
		return l, nil
	case strings.HasPrefix(name, "d"):
		seconds, err := strconv.Atoi(name[1:])
		if err != nil || seconds < 2 || 3600%seconds != 0 {
			return layout{}, fmt.Errorf("layout %q: d and a span in seconds that divides an hour, such as d60", name)
		}
		return spanLayout(name, time.Duration(seconds)*time.Second), nil
	}
	return layout{}, fmt.Errorf("layout %q: one of a, b, c, d<seconds>", name)
}

// rowLayout is a layout of a row a reading, whose ids field (column
// idsColumn) is written by ids.
func rowLayout(name, what, create, idsColumn string, ids func(*copyBuf, *dataset), page string) layout {
	table := "dense_" + name
	columns := "sensor_id, datetime, " + idsColumn + ", vals"
	deleteSQL := "DELETE FROM " + table + " WHERE sensor_id = $1 AND datetime >= $2 AND datetime < $3"
	return layout{
		name: name, what: what, table: table,
		create: append([]string{create}, hypertable(table, "datetime")...),
		count:  "SELECT count(*), count(*) FILTER (WHERE cardinality(vals) <> 10) FROM " + table,
		write: func(ctx context.Context, conn *pgx.Conn, d *dataset, sp span, overwrite bool) error {
			c := newCopyBuf()
			for i := sp.from; i < sp.to; i++ {
				c.row(4)
				c.int8(d.sensors[sp.sensor])
				c.time(d.at(i))
				ids(c, d)
				c.floats(d.values(sp.sensor, i))
			}
			if !overwrite {
				return c.send(ctx, conn.PgConn(), table, columns)
			}
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				tag, err := tx.Exec(ctx, deleteSQL, d.sensors[sp.sensor], d.at(sp.from), d.at(sp.to))
				if err != nil {
					return err
				}
				if tag.RowsAffected() != int64(sp.len()) {
					return fmt.Errorf("%s: deleted %d readings of %d", table, tag.RowsAffected(), sp.len())
				}
				return c.send(ctx, conn.PgConn(), table, columns)
			})
		},
		readPage: func(ctx context.Context, conn *pgx.Conn, sensor int64, from time.Time) (int, error) {
			rows, _ := conn.Query(ctx, page, sensor, from)
			var (
				at   time.Time
				ids  []int64
				vals []float64
				n    int
			)
			_, err := pgx.ForEachRow(rows, []any{&at, &ids, &vals}, func() error {
				if len(ids) != len(vals) {
					return fmt.Errorf("%s: %d ids, %d values", table, len(ids), len(vals))
				}
				n++
				return nil
			})
			return n, err
		},
	}
}

// spanLayout is one row per sensor and span: the span's instants and
// values as arrays (values reading by reading, each reading's in the
// order of the set's ids). A batch whose first span is stored already
// (it began in the batch before) merges with it: the row is deleted and
// returned, and written again with the batch's readings. An overwrite
// does the same with every span it touches, keeping the readings of its
// two edge spans that lie outside the batch.
func spanLayout(name string, length time.Duration) layout {
	table := "dense_" + name
	const columns = "sensor_id, span_start, set_id, times, vals"
	deleteSQL := `DELETE FROM ` + table + ` WHERE sensor_id = $1 AND span_start >= $2 AND span_start <= $3
RETURNING span_start, CASE WHEN span_start IN ($2, $3) THEN times END, CASE WHEN span_start IN ($2, $3) THEN vals END`
	perPage := 1000/int(length/time.Second) + 2
	pageSQL := fmt.Sprintf(`SELECT times, vals FROM %s WHERE sensor_id = $1 AND span_start >= $2 ORDER BY span_start LIMIT %d`, table, perPage)
	return layout{
		name: name, table: table,
		what: fmt.Sprintf("one row per sensor and %s: (sensor_id, span_start, set_id int, times timestamptz[], vals float8[])", length),
		count: fmt.Sprintf(`SELECT coalesce(sum(cardinality(times)), 0), count(*) FILTER (WHERE cardinality(vals) <> 10*cardinality(times)
    OR times[1] < span_start OR times[cardinality(times)] >= span_start + interval '%d seconds'
    OR EXISTS (SELECT FROM unnest(times) WITH ORDINALITY u(t, i) WHERE i > 1 AND t <= times[i-1])) FROM %s`, int(length/time.Second), table),
		create: append([]string{
			`CREATE TABLE ` + table + ` (sensor_id bigint NOT NULL, span_start timestamptz NOT NULL, set_id int NOT NULL,
			  times timestamptz[] NOT NULL, vals float8[] NOT NULL, PRIMARY KEY (sensor_id, span_start))`,
		}, hypertable(table, "span_start")...),
		write: func(ctx context.Context, conn *pgx.Conn, d *dataset, sp span, overwrite bool) error {
			sensor := d.sensors[sp.sensor]
			first, last := d.at(sp.from).Truncate(length), d.at(sp.to-1).Truncate(length)
			c := newCopyBuf()
			var times []time.Time
			var vals []float64
			flush := func(start time.Time) {
				c.row(5)
				c.int8(sensor)
				c.time(start)
				c.int4(1)
				c.times(times)
				c.floats(vals)
				times, vals = times[:0], vals[:0]
			}
			if !overwrite && first.Equal(d.at(sp.from)) {
				// The batch begins a span: nothing stored to merge with.
				for i := sp.from; i < sp.to; i++ {
					if t := d.at(i); len(times) > 0 && !t.Truncate(length).Equal(times[0].Truncate(length)) {
						flush(times[0].Truncate(length))
					}
					times, vals = append(times, d.at(i)), append(vals, d.values(sp.sensor, i)...)
				}
				flush(times[0].Truncate(length))
				return c.send(ctx, conn.PgConn(), table, columns)
			}
			hi := first
			if overwrite {
				hi = last
			}
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				rows, _ := tx.Query(ctx, deleteSQL, sensor, first, hi)
				type kept struct {
					times []time.Time
					vals  []float64
				}
				edges := map[int64]kept{} // by the span's start, in µs
				var (
					start  time.Time
					ts     []time.Time
					vs     []float64
					gotten int
				)
				if _, err := pgx.ForEachRow(rows, []any{&start, &ts, &vs}, func() error {
					gotten++
					if ts != nil {
						edges[start.UnixMicro()] = kept{slices.Clone(ts), slices.Clone(vs)}
					}
					return nil
				}); err != nil {
					return err
				}
				if want := int(hi.Sub(first)/length) + 1; gotten != want {
					return fmt.Errorf("%s: %d spans stored of %d", table, gotten, want)
				}
				// The stored readings of the edges outside the batch, then
				// the batch's, span by span: each span's in time order.
				from, to := d.at(sp.from), d.at(sp.to)
				keep := func(start time.Time, after bool) {
					k := edges[start.UnixMicro()]
					for j, t := range k.times {
						if t.Before(from) != after && (t.Before(from) || !t.Before(to)) {
							times, vals = append(times, t), append(vals, k.vals[j*len(d.inputIDs):(j+1)*len(d.inputIDs)]...)
						}
					}
				}
				keep(first, false)
				cur := first
				for i := sp.from; i < sp.to; i++ {
					t := d.at(i)
					if s := t.Truncate(length); !s.Equal(cur) {
						flush(cur)
						cur = s
					}
					times, vals = append(times, t), append(vals, d.values(sp.sensor, i)...)
				}
				if overwrite {
					keep(last, true)
				}
				flush(cur)
				return c.send(ctx, conn.PgConn(), table, columns)
			})
		},
		readPage: func(ctx context.Context, conn *pgx.Conn, sensor int64, from time.Time) (int, error) {
			rows, _ := conn.Query(ctx, pageSQL, sensor, from.Truncate(length))
			var (
				ts []time.Time
				vs []float64
				n  int
			)
			_, err := pgx.ForEachRow(rows, []any{&ts, &vs}, func() error {
				if len(vs) != 10*len(ts) {
					return fmt.Errorf("%s: %d instants, %d values", table, len(ts), len(vs))
				}
				for _, t := range ts {
					if !t.Before(from) && n < 1000 {
						n++
					}
				}
				return nil
			})
			return n, err
		},
	}
}

-- The deletes of ingest and of range deletes touch only the chunks that
-- hold the range, and lock each one to write it before anything reads it
-- (docs/reliability.md, "Compression and chunk creation").
--
-- A DELETE on the readings hypertable locks every chunk of it, whatever
-- its WHERE (PostgreSQL's inheritance expansion, before TimescaleDB
-- excludes chunks: timescale/timescaledb#8410). It then waits for the
-- compression of any chunk, however far from its rows, and its planning
-- grows with the number of chunks (135 ms with 406). These functions run a
-- DELETE on each chunk of the range instead. Its first lock on the chunk
-- is the one to write it (RowExclusiveLock), so a writer never holds a
-- chunk's read lock while it waits for the write lock: a compression,
-- which holds the chunk (ExclusiveLock) and then upgrades to truncate it
-- (AccessExclusiveLock), waits for the writer or is waited for, and never
-- both.
--
-- The chunks come from TimescaleDB's catalog, the way its own chunk
-- exclusion finds them; its public view, timescaledb_information.chunks,
-- takes milliseconds a call. TestReadingsParts checks the lookup against
-- that view. Internal time is microseconds since the Unix epoch. A chunk
-- that the retention policy drops between the lookup and its DELETE makes
-- the statement a serialization failure, which the store retries whole.
-- On a plain table the one part is readings itself.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION readings_parts(lo timestamptz, hi timestamptz) RETURNS SETOF text
LANGUAGE plpgsql STABLE AS $$
BEGIN
    -- Nested, so that TimescaleDB's catalog is only named where it exists.
    IF to_regclass('_timescaledb_catalog.hypertable') IS NOT NULL THEN
        IF EXISTS (SELECT FROM _timescaledb_catalog.hypertable WHERE schema_name = current_schema() AND table_name = 'readings') THEN
            RETURN QUERY
            SELECT format('%I.%I', c.schema_name, c.table_name)
            FROM _timescaledb_catalog.hypertable h
            JOIN _timescaledb_catalog.dimension d ON d.hypertable_id = h.id AND d.column_name = 'datetime'
            JOIN _timescaledb_catalog.dimension_slice s ON s.dimension_id = d.id
            JOIN _timescaledb_catalog.chunk_constraint cc ON cc.dimension_slice_id = s.id
            JOIN _timescaledb_catalog.chunk c ON c.id = cc.chunk_id
            WHERE h.schema_name = current_schema() AND h.table_name = 'readings'
              AND s.range_start < (extract(epoch FROM hi) * 1000000)::bigint
              AND s.range_end > (extract(epoch FROM lo) * 1000000)::bigint
            ORDER BY s.range_start;
            RETURN;
        END IF;
    END IF;
    RETURN NEXT 'readings';
END;
$$;
-- +goose StatementEnd

-- delete_readings deletes the sensor's readings from lo (inclusive) to hi
-- (exclusive), only those at instants unless it is NULL, and returns how
-- many there were. Without RETURNING, which makes a DELETE on TimescaleDB
-- several times slower; joined with the instants, so that the plan is a
-- hash join for a file's worth of them.
-- +goose StatementBegin
CREATE FUNCTION delete_readings(sensor bigint, lo timestamptz, hi timestamptz, instants timestamptz[] DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    part text;
    n bigint;
    total bigint := 0;
BEGIN
    FOR part IN SELECT readings_parts(lo, hi) LOOP
        IF instants IS NULL THEN
            EXECUTE format('DELETE FROM %s WHERE sensor_id = $1 AND datetime >= $2 AND datetime < $3', part)
                USING sensor, lo, hi;
        ELSE
            EXECUTE format('DELETE FROM %s r USING unnest($4) AS i(datetime)
                WHERE r.sensor_id = $1 AND r.datetime >= $2 AND r.datetime < $3 AND r.datetime = i.datetime', part)
                USING sensor, lo, hi, instants;
        END IF;
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
    END LOOP;
    RETURN total;
EXCEPTION WHEN undefined_table THEN
    RAISE EXCEPTION 'a chunk of readings was dropped while readings in it were being deleted' USING ERRCODE = 'serialization_failure';
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION delete_readings(bigint, timestamptz, timestamptz, timestamptz[]);
DROP FUNCTION readings_parts(timestamptz, timestamptz);

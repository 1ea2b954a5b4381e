-- Where the server offers TimescaleDB, readings become a hypertable
-- partitioned by datetime and compressed by sensor once a chunk is a month
-- old. Where it does not, readings stay a plain table; the service works the
-- same on both (store.DB.StorageMode tells which is in force).
--
-- An extension that is installed but not in shared_preload_libraries (the
-- state right after installing a TimescaleDB package, before its tuning
-- step) cannot be caught here: CREATE EXTENSION is then FATAL for the
-- connection. So the preload is checked first, and without it readings stay
-- a plain table; the service warns at start and says how to get a
-- hypertable. Any other failure is the operator's to see: it fails the
-- migration instead of leaving a plain table behind a warning.
--
-- The hypertable gets no default index: the primary key (sensor_id,
-- datetime) serves every query, and a (datetime DESC) index would only cost
-- every insert.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb') THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'timescaledb')
       AND NOT 'timescaledb' = ANY (string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ',')) THEN
        RAISE WARNING 'timescaledb is installed but not in shared_preload_libraries: readings stay a plain table';
        RETURN;
    END IF;
    CREATE EXTENSION IF NOT EXISTS timescaledb;
    PERFORM create_hypertable('readings', 'datetime',
        chunk_time_interval => INTERVAL '7 days', create_default_indexes => false, migrate_data => true);
    ALTER TABLE readings SET (
        timescaledb.compress,
        timescaledb.compress_segmentby = 'sensor_id',
        timescaledb.compress_orderby = 'datetime'
    );
    PERFORM add_compression_policy('readings', INTERVAL '30 days');
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- A hypertable cannot be turned back into a plain table in place; the
-- extension stays, which leaves readings as they are.
SELECT 1;

-- Where the server offers TimescaleDB, readings become a hypertable
-- partitioned by datetime and compressed by sensor once a chunk is a month
-- old. Where it does not, or where the extension is installed but not in
-- shared_preload_libraries (CREATE EXTENSION then fails), readings stay a
-- plain table and a warning says why; the service works the same on both
-- (store.DB.StorageMode tells which is in force).

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'timescaledb') THEN
        RETURN;
    END IF;
    BEGIN
        CREATE EXTENSION IF NOT EXISTS timescaledb;
        PERFORM create_hypertable('readings', 'datetime',
            chunk_time_interval => INTERVAL '7 days', migrate_data => true);
        ALTER TABLE readings SET (
            timescaledb.compress,
            timescaledb.compress_segmentby = 'sensor_id',
            timescaledb.compress_orderby = 'datetime'
        );
        PERFORM add_compression_policy('readings', INTERVAL '30 days');
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'timescaledb is available but could not be used (%): readings stay a plain table', SQLERRM;
    END;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- A hypertable cannot be turned back into a plain table in place; the
-- extension stays, which leaves readings as they are.
SELECT 1;

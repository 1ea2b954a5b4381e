-- readings_vals_bytes gives a reading's values for the reads that send
-- every reading (store.Tx.SpanReadings: aggregates with outputs, the
-- rollups' rebuild). Sent as float8[], PostgreSQL calls float8send for
-- each value, a buffer allocated and freed each time: 0.8 s of the 0.95 s
-- that sending a million readings of ten values cost it. Where the role
-- may (a superuser's: internal functions are not for others) and the
-- server lays arrays out as the service decodes them (little-endian, the
-- checked value below), it is byteasend over the array as it is held, a
-- copy: 0.2 s for the same million. Elsewhere it is array_send, the
-- binary form float8[] is sent in, as before. The service tells the two
-- apart by the element type's place (store's decodeValueBytes).
-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    BEGIN
        CREATE FUNCTION readings_vals_bytes(float8[]) RETURNS bytea
            LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE AS 'byteasend';
    EXCEPTION WHEN insufficient_privilege THEN
        NULL;
    END;
    IF to_regprocedure('readings_vals_bytes(float8[])') IS NOT NULL
       AND readings_vals_bytes('{1.5,-2}'::float8[]) <> '\x0100000000000000bd0200000200000001000000000000000000f83f00000000000000c0'::bytea THEN
        DROP FUNCTION readings_vals_bytes(float8[]);
    END IF;
    IF to_regprocedure('readings_vals_bytes(float8[])') IS NULL THEN
        CREATE FUNCTION readings_vals_bytes(float8[]) RETURNS bytea
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT array_send($1)';
    END IF;
END;
$$;
-- +goose StatementEnd
-- +goose Down
DROP FUNCTION readings_vals_bytes(float8[]);

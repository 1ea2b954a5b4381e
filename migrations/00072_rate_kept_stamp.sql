-- What a rate rule keeps (00062, 00063) carries a stamp, drawn at random
-- by the write that kept it: a service that keeps the same window in
-- memory (sensing's keptWindows) finds in the rules' read whether the
-- stored one is still the one it wrote, and then reads neither the head
-- nor the parts. NULL: nothing kept, or kept before this column. Not
-- indexed, so that the rules' updates stay HOT.
-- +goose Up
ALTER TABLE alarm_rules ADD COLUMN rate_kept_stamp bigint;
-- +goose Down
ALTER TABLE alarm_rules DROP COLUMN rate_kept_stamp;

-- The runs a schedule started (docs/api.md#list-runs: `schedule_id`; docs/api.md#schedules:
-- `history.last_ran`), newest first, found by the schedule_id of their `schedule` JSON without
-- reading every scheduled run. Queries spell the key as this index does (runs.ts scheduleIdOf).
CREATE INDEX runs_by_schedule ON runs (json_extract(schedule, '$.schedule_id'), created_at, seq) WHERE schedule IS NOT NULL;

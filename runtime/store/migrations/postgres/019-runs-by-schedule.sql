-- PostgreSQL's form of 019-runs-by-schedule.sql: the runs a schedule started, newest first, by the
-- schedule_id of their `schedule` JSON. Queries spell the key as this index does (runs.ts scheduleIdOf).
CREATE INDEX runs_by_schedule ON runs (((schedule::jsonb) ->> 'schedule_id'), created_at, seq) WHERE schedule IS NOT NULL;

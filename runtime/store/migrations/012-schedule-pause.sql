-- Paused schedule triggers (docs/definitions.md#pausing-a-schedule). A row here keeps its schedule
-- from firing; resuming deletes the row. Kept apart from schedule_state, whose rows come and go
-- with what the scheduler wants, so a pause outlives an automation being disabled or re-applied.
CREATE TABLE schedule_pauses (
  schedule_id TEXT PRIMARY KEY,   -- <factory>/<automation>/<schedule name, or #index>
  paused_at   TEXT NOT NULL,      -- RFC 3339 UTC
  paused_by   TEXT NOT NULL       -- the key's name
);

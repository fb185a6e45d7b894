-- Fields of an Oz-style run request that have no local meaning, recorded as given so that the run
-- shows them back and the list can filter on them (docs/api.md#oz-compatibility): a JSON object
-- {config: {model_id, name, skill_spec, ...}, skill, team, conversation_id}, or NULL.
ALTER TABLE runs ADD COLUMN oz TEXT;

-- Schedule triggers (docs/definitions.md#schedules): an automation's schedules as compiled, the
-- next time each fires, and the schedule a run was started by.
ALTER TABLE automations ADD COLUMN schedules TEXT;   -- JSON array of {name?, cron}, or NULL
CREATE TABLE schedule_state (
  schedule_id  TEXT PRIMARY KEY,   -- <factory>/<automation>/<schedule name, or #index>
  cron         TEXT NOT NULL,      -- the expression next_fire_at was computed from
  next_fire_at TEXT NOT NULL
) STRICT;
-- runs.source's CHECK cannot change without rebuilding the table, whose children cascade on delete:
-- a scheduled run is stored as source API with this JSON {schedule_id, schedule_name, cron_schedule}
-- set, and the API shows it as source SCHEDULE.
ALTER TABLE runs ADD COLUMN schedule TEXT;

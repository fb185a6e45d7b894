-- Oz fields and schedule triggers (docs/api.md#oz-compatibility, docs/definitions.md#schedules): PostgreSQL's form of 009-run-oz-fields.sql.
ALTER TABLE runs ADD COLUMN oz TEXT COLLATE "C";

ALTER TABLE automations ADD COLUMN schedules TEXT COLLATE "C";
CREATE TABLE schedule_state (
  schedule_id  TEXT COLLATE "C" PRIMARY KEY,
  cron         TEXT COLLATE "C" NOT NULL,
  next_fire_at TEXT COLLATE "C" NOT NULL
);
ALTER TABLE runs ADD COLUMN schedule TEXT COLLATE "C";

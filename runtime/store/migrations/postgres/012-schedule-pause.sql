-- Paused schedule triggers (docs/definitions.md#pausing-a-schedule): PostgreSQL's form of 012-schedule-pause.sql.
CREATE TABLE schedule_pauses (
  schedule_id TEXT COLLATE "C" PRIMARY KEY,
  paused_at   TEXT COLLATE "C" NOT NULL,
  paused_by   TEXT COLLATE "C" NOT NULL
);

-- The process groups a run's commands lead while they run (docs/runs.md): PostgreSQL's form of 006-run-process.sql.
CREATE TABLE run_process_groups (
  run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  pgid BIGINT NOT NULL,
  started_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (run_id, pgid)
);

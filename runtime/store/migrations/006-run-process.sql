-- The process groups a run's commands lead while they run (docs/runs.md). A runtime killed by SIGKILL
-- cannot stop them; at the next start, restart recovery kills the groups recorded for each run it
-- finds INPROGRESS (runtime/executor/process.ts killOrphanGroup) before marking the run ERROR.
CREATE TABLE run_process_groups (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  pgid INTEGER NOT NULL,               -- the leader's pid, which is the group id
  started_at TEXT NOT NULL,
  PRIMARY KEY (run_id, pgid)
) STRICT, WITHOUT ROWID;

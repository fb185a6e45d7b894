-- What the holder of a run's lease has reported of its transcript (docs/runs.md#workers): how many
-- events of its batches were taken, so a batch sent again after a lost answer is stored once, and
-- how many bytes they hold, so a worker's transcript stays under the runtime's cap whatever the
-- worker sends.
ALTER TABLE runs ADD COLUMN reported_events INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN reported_bytes INTEGER NOT NULL DEFAULT 0;
-- When a remote worker's run must have ended by its own time limits (ms since the epoch): past it,
-- the lease is no longer renewed and the sweep ends the run, whatever the worker does.
ALTER TABLE runs ADD COLUMN lease_deadline_ms INTEGER;

-- Leases on runs in progress (docs/runs.md#workers): who executes the run (a serve process's pool
-- or a remote worker), until when its lease holds (ms since the epoch; heartbeats extend it), and
-- whether a cancel was asked of that holder. A run whose lease expired is ended ERROR worker_lost.
ALTER TABLE runs ADD COLUMN lease_holder TEXT;
ALTER TABLE runs ADD COLUMN lease_until_ms BIGINT;
ALTER TABLE runs ADD COLUMN cancel_requested_at TEXT;

-- The sweep looks only at runs in progress, by lease end.
CREATE INDEX runs_lease_sweep ON runs (lease_until_ms) WHERE state = 'INPROGRESS';

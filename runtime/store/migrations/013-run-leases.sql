-- Leases on runs in progress (docs/runs.md#workers): which executor runs the run (a random id per
-- start of a serve process's pool or of a remote worker), until when its lease holds (ms since the epoch; heartbeats extend it), and
-- whether a cancel was asked of that holder. A run whose lease expired is ended ERROR worker_lost.
ALTER TABLE runs ADD COLUMN lease_holder TEXT;
-- Who the holder is, for people: host/pid of a serve process, key and --name of a worker.
ALTER TABLE runs ADD COLUMN lease_name TEXT;
ALTER TABLE runs ADD COLUMN lease_until_ms INTEGER;
ALTER TABLE runs ADD COLUMN cancel_requested_at TEXT;

-- The sweep looks only at runs in progress, by lease end.
CREATE INDEX runs_lease_sweep ON runs (lease_until_ms) WHERE state = 'INPROGRESS';

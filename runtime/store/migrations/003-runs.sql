-- Agent runs, their attachments, their transcripts and create idempotency (docs/api.md, docs/automations.md, docs/runs.md).

CREATE TABLE runs (
  seq INTEGER PRIMARY KEY,             -- insertion order: breaks created_at ties, newest first
  run_id TEXT NOT NULL UNIQUE,         -- run_…
  state TEXT NOT NULL CHECK (state IN ('QUEUED', 'INPROGRESS', 'SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED')),
  title TEXT,
  prompt TEXT NOT NULL,
  environment_id TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('API', 'WEBHOOK')),
  creator_type TEXT NOT NULL CHECK (creator_type IN ('user', 'agent', 'automation')),
  creator_name TEXT NOT NULL,
  factory TEXT,
  automation TEXT,
  webhook_uid TEXT,
  delivery_id TEXT,
  metadata TEXT,                       -- JSON object, or NULL
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  status_message TEXT,
  error_code TEXT,
  retryable INTEGER,                   -- 0/1 with status_message
  workspace_removed_at TEXT            -- set once the executor deleted the run's workspace
) STRICT;

-- The claim takes the oldest QUEUED run; the list pages newest first, optionally by state.
CREATE INDEX runs_state_created ON runs (state, created_at, seq);
CREATE INDEX runs_created ON runs (created_at, seq);
CREATE INDEX runs_finished ON runs (finished_at) WHERE workspace_removed_at IS NULL AND finished_at IS NOT NULL;

-- Files given to the run (e.g. event-payload.json: the delivery body exactly as received).
CREATE TABLE run_attachments (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  bytes BLOB NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  PRIMARY KEY (run_id, name)
) STRICT;

CREATE TABLE run_events (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,                -- 1, 2, … per run
  time TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('command', 'output', 'message', 'file_change', 'state')),
  data TEXT NOT NULL,                  -- JSON object
  PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

-- Idempotency-Key of a create, per API key, kept 24 hours (docs/api.md).
CREATE TABLE run_idempotency (
  key_id TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  created_at TEXT NOT NULL,
  PRIMARY KEY (key_id, idempotency_key)
) STRICT;

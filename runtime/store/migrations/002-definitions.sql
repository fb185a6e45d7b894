-- Definitions as runtime state (docs/plan-apply.md, docs/ingress.md#webhook-lifecycle): factories, webhooks, automations, environments.

CREATE TABLE factories (
  name        TEXT PRIMARY KEY,
  managed_by  TEXT NOT NULL CHECK (managed_by IN ('definitions', 'api')),  -- fixed at creation
  description TEXT,
  revision    TEXT,                       -- the --revision label of the last changing apply
  generation  INTEGER NOT NULL DEFAULT 0, -- bumped by every apply that changes something
  digest      TEXT,                       -- digest of the last applied snapshot
  applied_at  TEXT,
  created_at  TEXT NOT NULL
) STRICT;

-- Rows are never removed: a deleted webhook keeps its row (deleted_at set) so that its UID is
-- never reused (docs/definitions.md) and its delivery log stays readable.
CREATE TABLE webhooks (
  uid                TEXT PRIMARY KEY,
  factory            TEXT NOT NULL REFERENCES factories (name),
  name               TEXT NOT NULL,
  auth_mode          TEXT NOT NULL CHECK (auth_mode IN ('token', 'url_token', 'signature')),
  signature_scheme   TEXT,
  secret_name        TEXT NOT NULL,
  secret_version     INTEGER,             -- the bound version; NULL while the secret is pending
  delivery_id_header TEXT,
  description        TEXT,
  enabled            INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  managed_by         TEXT NOT NULL CHECK (managed_by IN ('definitions', 'api')),
  source_file        TEXT,                -- NULL for API-created webhooks
  created_at         TEXT NOT NULL,
  updated_at         TEXT NOT NULL,
  deleted_at         TEXT
) STRICT;
-- A live name is unique per factory; deleted rows may share it.
CREATE UNIQUE INDEX webhooks_live_name ON webhooks (factory, name) WHERE deleted_at IS NULL;

CREATE TABLE automations (
  factory     TEXT NOT NULL REFERENCES factories (name),
  name        TEXT NOT NULL,
  title       TEXT,
  enabled     INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  environment TEXT NOT NULL,
  triggers    TEXT NOT NULL,              -- JSON array of webhook triggers (docs/definitions.md)
  prompt      TEXT NOT NULL,
  source_file TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  PRIMARY KEY (factory, name)
) STRICT;

CREATE TABLE environments (
  name        TEXT PRIMARY KEY,           -- the environment id, unique across the runtime
  factory     TEXT NOT NULL REFERENCES factories (name),
  spec        TEXT NOT NULL,              -- JSON EnvironmentDef (core/snapshot.ts)
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
) STRICT;

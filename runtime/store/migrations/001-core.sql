-- Core runtime state: runtime metadata, API keys and team secrets (docs/runtime.md).

-- Small key/value facts about this database, e.g. the master key check value.
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value BLOB NOT NULL
) STRICT;

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,                 -- key_…
  name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('personal', 'agent')),
  scopes TEXT NOT NULL,                -- JSON array of 'runs' | 'manage' | 'admin'
  factories TEXT,                      -- JSON array of factory names limiting 'manage'; NULL = all
  key_hash BLOB NOT NULL UNIQUE,       -- sha256 of the raw key; the raw key is never stored
  created_at TEXT NOT NULL,
  revoked_at TEXT
) STRICT;

CREATE TABLE secrets (
  name TEXT PRIMARY KEY,
  current_version INTEGER NOT NULL DEFAULT 0,   -- 0: pending, no value yet
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;

CREATE TABLE secret_versions (
  secret_name TEXT NOT NULL REFERENCES secrets (name) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  sealed BLOB NOT NULL,                -- runtime/crypto.ts seal(): AES-256-GCM, AAD = name + version
  created_at TEXT NOT NULL,
  PRIMARY KEY (secret_name, version)
) STRICT;

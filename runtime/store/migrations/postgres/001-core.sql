-- Core runtime state: runtime metadata, API keys and team secrets (docs/runtime.md).
-- PostgreSQL's form of SQLite's 001-core.sql (docs/runtime.md#postgresql): TEXT is COLLATE "C" so
-- that ORDER BY and comparisons follow SQLite's binary order; integers are BIGINT; 0/1 flags stay integers.

CREATE TABLE meta (
  key TEXT COLLATE "C" PRIMARY KEY,
  value BYTEA NOT NULL
);

CREATE TABLE api_keys (
  id TEXT COLLATE "C" PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL,
  kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('personal', 'agent')),
  scopes TEXT COLLATE "C" NOT NULL,
  factories TEXT COLLATE "C",
  key_hash BYTEA NOT NULL UNIQUE,
  created_at TEXT COLLATE "C" NOT NULL,
  revoked_at TEXT COLLATE "C"
);

CREATE TABLE secrets (
  name TEXT COLLATE "C" PRIMARY KEY,
  current_version BIGINT NOT NULL DEFAULT 0,
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE secret_versions (
  secret_name TEXT COLLATE "C" NOT NULL REFERENCES secrets (name) ON DELETE CASCADE,
  version BIGINT NOT NULL,
  sealed BYTEA NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (secret_name, version)
);

-- Definitions as runtime state (docs/plan-apply.md, docs/ingress.md#webhook-lifecycle): PostgreSQL's form of 002-definitions.sql.

CREATE TABLE factories (
  name        TEXT COLLATE "C" PRIMARY KEY,
  managed_by  TEXT COLLATE "C" NOT NULL CHECK (managed_by IN ('definitions', 'api')),
  description TEXT COLLATE "C",
  revision    TEXT COLLATE "C",
  generation  BIGINT NOT NULL DEFAULT 0,
  digest      TEXT COLLATE "C",
  applied_at  TEXT COLLATE "C",
  created_at  TEXT COLLATE "C" NOT NULL
);

CREATE TABLE webhooks (
  uid                TEXT COLLATE "C" PRIMARY KEY,
  factory            TEXT COLLATE "C" NOT NULL REFERENCES factories (name),
  name               TEXT COLLATE "C" NOT NULL,
  auth_mode          TEXT COLLATE "C" NOT NULL CHECK (auth_mode IN ('token', 'url_token', 'signature')),
  signature_scheme   TEXT COLLATE "C",
  secret_name        TEXT COLLATE "C" NOT NULL,
  secret_version     BIGINT,
  delivery_id_header TEXT COLLATE "C",
  description        TEXT COLLATE "C",
  enabled            BIGINT NOT NULL CHECK (enabled IN (0, 1)),
  managed_by         TEXT COLLATE "C" NOT NULL CHECK (managed_by IN ('definitions', 'api')),
  source_file        TEXT COLLATE "C",
  created_at         TEXT COLLATE "C" NOT NULL,
  updated_at         TEXT COLLATE "C" NOT NULL,
  deleted_at         TEXT COLLATE "C"
);
CREATE UNIQUE INDEX webhooks_live_name ON webhooks (factory, name) WHERE deleted_at IS NULL;

CREATE TABLE automations (
  factory     TEXT COLLATE "C" NOT NULL REFERENCES factories (name),
  name        TEXT COLLATE "C" NOT NULL,
  title       TEXT COLLATE "C",
  enabled     BIGINT NOT NULL CHECK (enabled IN (0, 1)),
  environment TEXT COLLATE "C" NOT NULL,
  triggers    TEXT COLLATE "C" NOT NULL,
  prompt      TEXT COLLATE "C" NOT NULL,
  source_file TEXT COLLATE "C" NOT NULL,
  created_at  TEXT COLLATE "C" NOT NULL,
  updated_at  TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (factory, name)
);

CREATE TABLE environments (
  name        TEXT COLLATE "C" PRIMARY KEY,
  factory     TEXT COLLATE "C" NOT NULL REFERENCES factories (name),
  spec        TEXT COLLATE "C" NOT NULL,
  created_at  TEXT COLLATE "C" NOT NULL,
  updated_at  TEXT COLLATE "C" NOT NULL
);

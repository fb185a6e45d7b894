-- Delivery log, stored payloads and accepted identities (docs/ingress.md#identity, docs/ingress.md#delivery-log).
-- Three tables because they live for different times: log entries for the newest 50 per webhook
-- and 7 days; payloads only for Accepted entries (dropped with their entry); accepted identities
-- for 30 days, so a replay after its payload was pruned is still a Duplicate.

CREATE TABLE deliveries (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  webhook_uid  TEXT    NOT NULL,
  -- The identity (docs/ingress.md#identity), or a generated dlv_ id when it cannot be known.
  delivery_id  TEXT    NOT NULL,
  outcome      TEXT    NOT NULL CHECK (outcome IN
                 ('accepted', 'duplicate', 'rejected_auth', 'rejected_invalid_json', 'rejected_too_large')),
  -- A short machine reason for rejections (e.g. missing_credentials, signature_mismatch).
  reason       TEXT,
  -- Bytes received; for too-large entries, the declared length or the bytes seen before the cut.
  size         INTEGER NOT NULL,
  received_at  TEXT    NOT NULL,
  received_ms  INTEGER NOT NULL,
  -- Safe request facts only; never a header that can carry a credential (docs/ingress.md).
  sender       TEXT,
  content_type TEXT,
  user_agent   TEXT
) STRICT;
CREATE INDEX deliveries_by_webhook ON deliveries (webhook_uid, seq DESC);
CREATE INDEX deliveries_by_id ON deliveries (webhook_uid, delivery_id);
CREATE INDEX deliveries_by_time ON deliveries (received_ms);

-- The exact received bytes of an Accepted delivery.
CREATE TABLE delivery_payloads (
  delivery_seq INTEGER PRIMARY KEY REFERENCES deliveries (seq) ON DELETE CASCADE,
  body         BLOB    NOT NULL
) STRICT;

-- Accepted identities: the UNIQUE key that makes racing duplicates give exactly one Accepted.
CREATE TABLE delivery_identities (
  webhook_uid  TEXT    NOT NULL,
  identity     TEXT    NOT NULL,
  accepted_ms  INTEGER NOT NULL,
  PRIMARY KEY (webhook_uid, identity)
) STRICT, WITHOUT ROWID;
CREATE INDEX delivery_identities_by_time ON delivery_identities (accepted_ms);

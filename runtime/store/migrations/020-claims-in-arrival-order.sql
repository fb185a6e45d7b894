-- Accepted identities in arrival order (docs/ingress.md#the-claim-in-arrival-order): a table with no
-- index keyed by the identity, found through an index in memory built at open from each row's
-- keyed hash (runtime/store/claims.ts). A random delivery id no longer puts each claim on a page
-- of its own. Rows copied here get their hash at the first open; the key is the database's own.
CREATE TABLE delivery_claims (
  id           INTEGER PRIMARY KEY,
  webhook_uid  TEXT    NOT NULL,
  identity     TEXT    NOT NULL,
  accepted_ms  INTEGER NOT NULL,
  -- The Accepted entry that holds the claim (NULL for claims older than migration 008's).
  seq          INTEGER,
  hash         INTEGER
) STRICT;
INSERT INTO delivery_claims (webhook_uid, identity, accepted_ms, seq)
  SELECT webhook_uid, identity, accepted_ms, seq FROM delivery_identities ORDER BY accepted_ms;
DROP TABLE delivery_identities;
CREATE INDEX delivery_claims_by_time ON delivery_claims (accepted_ms);
CREATE TABLE delivery_claim_key (
  key BLOB NOT NULL
) STRICT;
INSERT INTO delivery_claim_key (key) VALUES (randomblob(16));

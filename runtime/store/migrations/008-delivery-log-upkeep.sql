-- A leaner write per delivery, and the delivery log's upkeep without a full scan
-- (docs/ingress.md#delivery-log and #performance).

-- Retention walks the log in seq order (the table's own key, which follows arrival), so the index
-- by time is one B-tree more per delivery that no query needs any more.
DROP INDEX IF EXISTS deliveries_by_time;

-- An accepted identity remembers the Accepted entry that claimed it: looking an Accepted entry up
-- by its id goes through the identity, so Accepted entries need no index by id of their own. Such
-- an index is keyed by a random value: every delivery dirtied one more random page of it, which
-- each commit then wrote to the WAL.
ALTER TABLE delivery_identities ADD COLUMN seq INTEGER;
UPDATE delivery_identities SET seq = (
  SELECT d.seq FROM deliveries d
  WHERE d.webhook_uid = delivery_identities.webhook_uid AND d.delivery_id = delivery_identities.identity AND d.outcome = 'accepted'
  ORDER BY d.seq DESC LIMIT 1);
-- Accepted entries whose identity was already forgotten get one back, as old as the entry, so the
-- claim still treats it as expired (a replay is Accepted, as before) while the entry stays findable.
INSERT OR IGNORE INTO delivery_identities (webhook_uid, identity, accepted_ms, seq)
  SELECT webhook_uid, delivery_id, MAX(received_ms), MAX(seq) FROM deliveries WHERE outcome = 'accepted'
  GROUP BY webhook_uid, delivery_id;

-- The other entries (Duplicate, Rejected) are still found by id through an index, now partial.
DROP INDEX deliveries_by_id;
CREATE INDEX deliveries_by_id ON deliveries (webhook_uid, delivery_id) WHERE outcome <> 'accepted';

-- The newest rejectedLogKeep Rejected entries per webhook are kept: the trim reads a webhook's
-- Rejected entries newest first. Partial, so Accepted and Duplicate entries never pay for it.
-- Queries must repeat this WHERE clause word for word for SQLite to use the index.
CREATE INDEX deliveries_rejected ON deliveries (webhook_uid, seq) WHERE outcome NOT IN ('accepted', 'duplicate');

-- The runs a delivery started are found by its Accepted log entry's seq (docs/ingress.md#delivery-log)
-- instead of by (webhook_uid, delivery_id): a delivery id is random, so an index keyed by it took a
-- page of its own per run created; the entry's seq only grows, so new runs go at the index's end.
-- Existing runs point at the newest Accepted entry of their delivery id (a temporary index keeps
-- that one pass linear); a run whose entry was pruned keeps NULL and lists under no entry.
ALTER TABLE runs ADD COLUMN delivery_seq INTEGER;
CREATE INDEX migration_016_accepted ON deliveries (webhook_uid, delivery_id, seq) WHERE outcome = 'accepted';
UPDATE runs SET delivery_seq = (
    SELECT MAX(d.seq) FROM deliveries d
    WHERE d.webhook_uid = runs.webhook_uid AND d.delivery_id = runs.delivery_id AND d.outcome = 'accepted')
  WHERE webhook_uid IS NOT NULL AND delivery_id IS NOT NULL;
DROP INDEX migration_016_accepted;
DROP INDEX runs_delivery;
CREATE INDEX runs_by_entry ON runs (delivery_seq) WHERE delivery_seq IS NOT NULL;

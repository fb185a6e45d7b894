-- PostgreSQL's form of 016-runs-by-entry.sql: the runs a delivery started are found by its Accepted
-- log entry's seq (docs/ingress.md#delivery-log), an index whose new keys only grow, instead of by
-- the random delivery id. Existing runs point at the newest Accepted entry of their delivery id.
ALTER TABLE runs ADD COLUMN delivery_seq BIGINT;
CREATE INDEX migration_016_accepted ON deliveries (webhook_uid, delivery_id, seq) WHERE outcome = 'accepted';
UPDATE runs SET delivery_seq = (
    SELECT MAX(d.seq) FROM deliveries d
    WHERE d.webhook_uid = runs.webhook_uid AND d.delivery_id = runs.delivery_id AND d.outcome = 'accepted')
  WHERE webhook_uid IS NOT NULL AND delivery_id IS NOT NULL;
DROP INDEX migration_016_accepted;
DROP INDEX runs_delivery;
CREATE INDEX runs_by_entry ON runs (delivery_seq) WHERE delivery_seq IS NOT NULL;

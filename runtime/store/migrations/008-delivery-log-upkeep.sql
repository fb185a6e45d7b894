-- The delivery log's upkeep without a full scan (docs/ingress.md#delivery-log).
-- Retention walks the log in seq order (the table's own key, which follows arrival), so the index
-- by time is one B-tree more per delivery that no query needs any more.
DROP INDEX IF EXISTS deliveries_by_time;

-- The newest rejectedLogKeep Rejected entries per webhook are kept: the trim reads a webhook's
-- Rejected entries newest first. Partial, so Accepted and Duplicate entries never pay for it.
-- Queries must repeat this WHERE clause word for word for SQLite to use the index.
CREATE INDEX deliveries_rejected ON deliveries (webhook_uid, seq) WHERE outcome NOT IN ('accepted', 'duplicate');

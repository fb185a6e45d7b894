-- A leaner write per delivery, and the delivery log's upkeep without a full scan
-- (docs/ingress.md#delivery-log and #performance): PostgreSQL's form of 008-delivery-log-upkeep.sql.

DROP INDEX IF EXISTS deliveries_by_time;

ALTER TABLE delivery_identities ADD COLUMN seq BIGINT;
UPDATE delivery_identities SET seq = (
  SELECT d.seq FROM deliveries d
  WHERE d.webhook_uid = delivery_identities.webhook_uid AND d.delivery_id = delivery_identities.identity AND d.outcome = 'accepted'
  ORDER BY d.seq DESC LIMIT 1);
INSERT INTO delivery_identities (webhook_uid, identity, accepted_ms, seq)
  SELECT webhook_uid, delivery_id, MAX(received_ms), MAX(seq) FROM deliveries WHERE outcome = 'accepted'
  GROUP BY webhook_uid, delivery_id
  ON CONFLICT DO NOTHING;

DROP INDEX deliveries_by_id;
CREATE INDEX deliveries_by_id ON deliveries (webhook_uid, delivery_id) WHERE outcome <> 'accepted';

CREATE INDEX deliveries_rejected ON deliveries (webhook_uid, seq) WHERE outcome NOT IN ('accepted', 'duplicate');

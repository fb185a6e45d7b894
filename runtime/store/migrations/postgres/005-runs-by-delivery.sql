-- The runs a delivery started (docs/ingress.md#delivery-log): PostgreSQL's form of 005-runs-by-delivery.sql.
CREATE INDEX runs_delivery ON runs (webhook_uid, delivery_id) WHERE webhook_uid IS NOT NULL;

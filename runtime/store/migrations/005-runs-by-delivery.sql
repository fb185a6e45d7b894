-- The runs a delivery started (docs/ingress.md#delivery-log, docs/automations.md): the delivery log looks them up by webhook and delivery id.
CREATE INDEX runs_delivery ON runs (webhook_uid, delivery_id) WHERE webhook_uid IS NOT NULL;

-- The runs a delivery started (SPEC 7.7 and 8): the delivery log looks them up by webhook and delivery id.
CREATE INDEX runs_delivery ON runs (webhook_uid, delivery_id) WHERE webhook_uid IS NOT NULL;

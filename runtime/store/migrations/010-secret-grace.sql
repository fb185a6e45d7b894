-- Graceful secret rotation (docs/runtime.md#graceful-rotation): after `factory secret update NAME
-- --grace 24h` a webhook is bound to the new version and still verifies with the version it was
-- bound to before, until previous_secret_until (ISO 8601, UTC). Both NULL when there is no grace;
-- any other change of the bound version clears them.
ALTER TABLE webhooks ADD COLUMN previous_secret_version INTEGER;
ALTER TABLE webhooks ADD COLUMN previous_secret_until TEXT;

-- The secret version that authenticated an Accepted or Duplicate delivery (NULL for rejections,
-- and for entries logged before this column existed).
ALTER TABLE deliveries ADD COLUMN secret_version INTEGER;

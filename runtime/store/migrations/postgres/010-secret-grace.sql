-- Graceful secret rotation (docs/runtime.md#graceful-rotation): PostgreSQL's form of 010-secret-grace.sql.
ALTER TABLE webhooks ADD COLUMN previous_secret_version BIGINT;
ALTER TABLE webhooks ADD COLUMN previous_secret_until TEXT COLLATE "C";

ALTER TABLE deliveries ADD COLUMN secret_version BIGINT;

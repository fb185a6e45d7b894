-- PostgreSQL's form of 015-payload-in-entry.sql: the stored payload of an Accepted entry moves into
-- the entry's own row (docs/ingress.md#delivery-log), one insert per delivery instead of two.
ALTER TABLE deliveries ADD COLUMN payload BYTEA;
UPDATE deliveries d SET payload = p.body FROM delivery_payloads p WHERE p.delivery_seq = d.seq;
DROP TABLE delivery_payloads;

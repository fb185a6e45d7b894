-- The stored payload of an Accepted entry moves into the entry's own row (docs/ingress.md#delivery-log):
-- one insert per delivery instead of two, and no foreign key to check. It is the row's last column,
-- so reading the other columns never reads the payload. Existing payloads are copied over, once.
ALTER TABLE deliveries ADD COLUMN payload BLOB;
UPDATE deliveries SET payload = (SELECT p.body FROM delivery_payloads p WHERE p.delivery_seq = deliveries.seq)
  WHERE seq IN (SELECT delivery_seq FROM delivery_payloads);
DROP TABLE delivery_payloads;

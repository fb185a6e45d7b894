-- PostgreSQL's form of 020-claims-in-arrival-order.sql: PostgreSQL keeps its UNIQUE key, which
-- replicas claiming the same identity at once need; only SQLite's single process can keep that key
-- in memory. The table says so for whoever reads the schema.
COMMENT ON TABLE delivery_identities IS 'Accepted identities: the UNIQUE (webhook_uid, identity) key that makes racing duplicates give exactly one Accepted (docs/ingress.md#identity).';

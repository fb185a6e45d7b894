-- PostgreSQL's form of 022-claim-hash-halfsiphash.sql: PostgreSQL keeps its claims under their
-- UNIQUE key and hashes nothing in memory, so nothing changes but the column's description.
COMMENT ON COLUMN delivery_identities.identity IS 'The delivery id that makes a second delivery a Duplicate for 30 days (docs/ingress.md#identity); found by the primary key, no hash.';

-- PostgreSQL's form of 021-checks-as-comparisons.sql: its CHECK constraints stay as they were
-- written. PostgreSQL checks a constant IN list without building anything per statement; only
-- SQLite's schema text changes. The column says what its values mean for whoever reads the schema.
COMMENT ON COLUMN deliveries.outcome IS 'Accepted, Duplicate or a kind of Rejected (docs/ingress.md#delivery-log); the CHECK lists every value.';

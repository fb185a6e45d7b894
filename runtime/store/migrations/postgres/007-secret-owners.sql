-- Which factories may bind a team secret (docs/runtime.md#which-factories-may-use-a-secret): PostgreSQL's form of 007-secret-owners.sql.
ALTER TABLE secrets ADD COLUMN factories TEXT COLLATE "C" CHECK (factories IS NULL OR json_array_length(factories::json) > 0);

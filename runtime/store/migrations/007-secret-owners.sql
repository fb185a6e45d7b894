-- Which factories may bind a team secret (docs/runtime.md#which-factories-may-use-a-secret): a
-- JSON array of factory names, sorted and never empty, or NULL for a team-wide secret that every
-- factory may use. Existing secrets stay team-wide, which is what they were before this column.
ALTER TABLE secrets ADD COLUMN factories TEXT CHECK (factories IS NULL OR (json_valid(factories) AND json_array_length(factories) > 0));

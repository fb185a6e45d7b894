-- Fields of an Oz-style run request that have no local meaning, recorded as given so that the run
-- shows them back and the list can filter on them (docs/api.md#oz-compatibility): a JSON object
-- {config: {model_id, name, skill_spec, ...}, skill, team, conversation_id}, or NULL.
ALTER TABLE runs ADD COLUMN oz TEXT;

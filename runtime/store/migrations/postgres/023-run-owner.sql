-- PostgreSQL's form of 023-run-owner.sql: the factory a run belongs to, for keys limited to some
-- factories (the automation's factory, or the one that defined an API run's environment when the
-- run was created).
ALTER TABLE runs ADD COLUMN owner TEXT COLLATE "C";
UPDATE runs SET owner = COALESCE(factory, (SELECT e.factory FROM environments e WHERE e.name = runs.environment_id));

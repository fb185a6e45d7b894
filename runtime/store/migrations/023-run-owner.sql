-- The factory a run belongs to, for keys limited to some factories (docs/runtime.md#factory-limited-keys):
-- the factory of the automation that started it, or for a run created through the API the factory that
-- defined its environment when it was created. Recorded once: an environment that later moves to
-- another factory does not take the runs made on it along. NULL when no factory defined the
-- environment; such a run is seen only by keys that are not limited.
ALTER TABLE runs ADD COLUMN owner TEXT;
UPDATE runs SET owner = COALESCE(factory, (SELECT e.factory FROM environments e WHERE e.name = runs.environment_id));

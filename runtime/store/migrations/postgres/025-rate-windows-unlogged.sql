-- The rate windows are counters of an abuse guard, not records: nothing is lost that matters if a
-- crash of PostgreSQL forgets them (every sender then starts a fresh window). UNLOGGED keeps them
-- out of the WAL, so the statement that counts each request no longer waits for a WAL flush of its
-- own at its commit (docs/deploy.md#several-replicas). PostgreSQL empties an unlogged table when it
-- recovers from a crash, and a standby has none of its rows: both mean fresh windows.
ALTER TABLE rate_windows SET UNLOGGED;

-- A webhook run's event payload is read from its delivery's log entry while that entry is kept
-- (docs/automations.md#the-event-payload): the run's attachment row keeps the name, size and
-- sha256, and `entry_seq` instead of a copy of the bytes (which is then empty). Only the ingress
-- writes such rows, in the transaction that logs the entry, and always for an entry that is the
-- run's own (runs.delivery_seq); the log's retention copies the bytes into the row before it deletes
-- the entry. Existing rows keep their bytes (entry_seq NULL).
ALTER TABLE run_attachments ADD COLUMN entry_seq INTEGER;

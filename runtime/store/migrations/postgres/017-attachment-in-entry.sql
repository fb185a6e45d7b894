-- PostgreSQL's form of 017-attachment-in-entry.sql: a webhook run's event payload is read from its
-- delivery's log entry while that entry is kept (docs/automations.md#the-event-payload); the
-- attachment row keeps `entry_seq` instead of a copy of the bytes, until the log's retention copies
-- them in before it deletes the entry. Existing rows keep their bytes (entry_seq NULL).
ALTER TABLE run_attachments ADD COLUMN entry_seq BIGINT;

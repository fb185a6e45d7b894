-- Retried and replayed runs, run notifications (docs/api.md#run-notifications) and their outbox.

-- The FAILED or ERROR run this one retries (`factory run retry`), or NULL.
ALTER TABLE runs ADD COLUMN retry_of TEXT;
-- A replay of a stored delivery (docs/ingress.md#replay): JSON {by: {type, name}, at}, or NULL;
-- webhook_uid and delivery_id name the delivery, as for the runs it started when it came in.
ALTER TABLE runs ADD COLUMN replay TEXT;
-- Where the run reports its state changes: JSON {url, secret_sealed (base64), secret_name?}, or NULL.
-- An automation's notify names a team secret, read when each notification is sent.
ALTER TABLE runs ADD COLUMN notify TEXT;

-- An automation's notify key as compiled: JSON {url, secretName?}, or NULL.
ALTER TABLE automations ADD COLUMN notify TEXT;

-- The outbox: one row per state change to report, written in the transaction that changes the
-- state, so a restart neither loses nor doubles one.
CREATE TABLE run_notifications (
  seq          INTEGER PRIMARY KEY,
  run_id       TEXT    NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  message_id   TEXT    NOT NULL UNIQUE,    -- webhook-id: the same on every attempt
  state        TEXT    NOT NULL,           -- the state the run entered
  run          TEXT    NOT NULL,           -- JSON: the run as it was right after the change
  status       TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts     INTEGER NOT NULL DEFAULT 0,
  next_ms      INTEGER,                    -- when the next attempt is due (pending only)
  created_at   TEXT    NOT NULL
) STRICT;
CREATE INDEX run_notifications_due ON run_notifications (next_ms) WHERE status = 'pending';
CREATE INDEX run_notifications_by_run ON run_notifications (run_id, seq);

CREATE TABLE run_notification_attempts (
  notification_seq INTEGER NOT NULL REFERENCES run_notifications (seq) ON DELETE CASCADE,
  attempt          INTEGER NOT NULL,       -- 1, 2, …
  at               TEXT    NOT NULL,
  status_code      INTEGER,                -- the HTTP status, or NULL when none came back
  error            TEXT,                   -- why it failed, one short sentence
  PRIMARY KEY (notification_seq, attempt)
) STRICT, WITHOUT ROWID;

-- Shared rate-limit windows (docs/ingress.md#rate-limits, docs/deploy.md#several-replicas): with
-- PostgreSQL, every replica counts a sender's deliveries in the same row, so the budget holds in
-- total and not per replica. The single-process SQLite runtime counts in memory and leaves this
-- table empty; it exists in both engines so their schemas stay the same.
CREATE TABLE rate_windows (
  key         TEXT PRIMARY KEY,   -- <webhook uid> <sender address>
  start_ms    INTEGER NOT NULL,   -- the window opened at its first request (epoch ms)
  deliveries  INTEGER NOT NULL,   -- requests counted against the delivery budget in this window
  failed_auth INTEGER NOT NULL    -- failed authentications in this window
) STRICT;
CREATE INDEX rate_windows_by_start ON rate_windows (start_ms);

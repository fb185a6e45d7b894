-- Shared rate-limit windows (docs/ingress.md#rate-limits, docs/deploy.md#several-replicas): every
-- replica counts a sender's deliveries in the same row, so the budget holds in total and not per
-- replica.
CREATE TABLE rate_windows (
  key         TEXT COLLATE "C" PRIMARY KEY,   -- <webhook uid> <sender address>
  start_ms    BIGINT NOT NULL,                -- the window opened at its first request (epoch ms)
  deliveries  BIGINT NOT NULL,                -- requests counted against the delivery budget
  failed_auth BIGINT NOT NULL                 -- failed authentications in this window
);
CREATE INDEX rate_windows_by_start ON rate_windows (start_ms);

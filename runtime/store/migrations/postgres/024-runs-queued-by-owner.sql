-- PostgreSQL's form of 024-runs-queued-by-owner.sql: each factory's QUEUED runs, oldest first, for
-- the claim that takes turns between factories.
CREATE INDEX runs_queued_by_owner ON runs ((COALESCE(owner, '')), created_at, seq) WHERE state = 'QUEUED';

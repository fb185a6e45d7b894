-- The run queue, per factory (docs/runs.md#the-pool): the QUEUED runs of each factory a run belongs
-- to (migration 023's owner; '' for none), oldest first, so that a claim finds every factory's
-- oldest queued run by a skip along this index instead of a walk of the whole queue. Only QUEUED
-- rows are in it: a run enters it when it is created and leaves it when it is claimed.
CREATE INDEX runs_queued_by_owner ON runs ((COALESCE(owner, '')), created_at, seq) WHERE state = 'QUEUED';

-- The CHECK constraints that list three values or more, rewritten as comparisons joined by OR
-- (docs/deploy.md#migrations). SQLite builds a constant IN list of three values or more
-- into a temporary table each time a statement checks it: for the delivery log's entry and a run
-- that is work on every insert. The expressions mean the same for every value (NULL included), so
-- every stored row satisfies them as before and nothing is rebuilt: only the text of the schema
-- changes, by SQLite's procedure for such changes (the runner lifts its defensive mode for this
-- migration and raises the schema version; runtime/store/db.ts).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (outcome IN' || char(10) || '                 (''accepted'', ''duplicate'', ''rejected_auth'', ''rejected_invalid_json'', ''rejected_too_large''))',
    'CHECK (outcome = ''accepted'' OR outcome = ''duplicate'' OR outcome = ''rejected_auth'' OR outcome = ''rejected_invalid_json'' OR outcome = ''rejected_too_large'')')
  WHERE type = 'table' AND name = 'deliveries';
UPDATE sqlite_schema SET sql = replace(replace(sql,
    'CHECK (state IN (''QUEUED'', ''INPROGRESS'', ''SUCCEEDED'', ''FAILED'', ''ERROR'', ''CANCELLED''))',
    'CHECK (state = ''QUEUED'' OR state = ''INPROGRESS'' OR state = ''SUCCEEDED'' OR state = ''FAILED'' OR state = ''ERROR'' OR state = ''CANCELLED'')'),
    'CHECK (creator_type IN (''user'', ''agent'', ''automation''))',
    'CHECK (creator_type = ''user'' OR creator_type = ''agent'' OR creator_type = ''automation'')')
  WHERE type = 'table' AND name = 'runs';
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (type IN (''command'', ''output'', ''message'', ''file_change'', ''state''))',
    'CHECK (type = ''command'' OR type = ''output'' OR type = ''message'' OR type = ''file_change'' OR type = ''state'')')
  WHERE type = 'table' AND name = 'run_events';
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (status IN (''pending'', ''delivered'', ''failed''))',
    'CHECK (status = ''pending'' OR status = ''delivered'' OR status = ''failed'')')
  WHERE type = 'table' AND name = 'run_notifications';
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (auth_mode IN (''token'', ''url_token'', ''signature''))',
    'CHECK (auth_mode = ''token'' OR auth_mode = ''url_token'' OR auth_mode = ''signature'')')
  WHERE type = 'table' AND name = 'webhooks';
PRAGMA writable_schema = RESET;

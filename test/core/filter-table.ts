/**
 * The payload filter rules of docs/filters.md as data: one row per rule or edge. Data only, so that
 * the evaluator test (test/core/filter.test.ts) and the ingress tests can run the same rows.
 * `payload` is raw JSON text, parsed with JSON.parse (which makes `__proto__` an own key, as a real
 * delivery body does). `path`, where given, is the failing key path explainFilter must report
 * (`'[]'` stands for "an element of this array").
 */
import type { PayloadFilter } from '../../core/filter.ts';

export interface FilterCase {
  name: string;
  filter: PayloadFilter;
  payload: string;
  matches: boolean;
  path?: string[];
}

// Excerpts of GitHub payloads from the octokit/webhooks examples (MIT): the real
// shapes and values, trimmed to the fields the rows use.
const PR_LABELED = `{"action": "labeled", "number": 2, "label": {"name": "bug", "color": "d73a4a"}, "pull_request": {"number": 2, "state": "open", "draft": false, "merged": false, "merged_by": null, "base": {"ref": "master"}, "head": {"ref": "changes"}, "labels": [{"id": 1362934389, "name": "bug", "color": "d73a4a", "default": true}], "user": {"login": "Codertocat", "type": "User"}, "requested_reviewers": [{"login": "octocat"}], "milestone": {"number": 1, "title": "v1.0", "state": "closed"}}, "sender": {"login": "Codertocat", "type": "User"}}`;
const WORKFLOW_RUN_COMPLETED = `{"action": "completed", "workflow": {"name": "test", "path": ".github/workflows/test.yml"}, "workflow_run": {"name": "", "conclusion": "success", "status": "completed", "head_branch": "master", "event": "repository_dispatch", "pull_requests": []}}`;
const PUSH = `{"ref": "refs/tags/simple-tag", "created": false, "deleted": true, "forced": false, "base_ref": null, "commits": [], "head_commit": null, "pusher": {"name": "Codertocat", "email": "21031067+Codertocat@users.noreply.github.com"}}`;
const ISSUE_COMMENT_CREATED = `{"action": "created", "issue": {"number": 1, "state": "open", "labels": [{"name": "bug"}], "assignee": {"login": "Codertocat"}, "milestone": {"number": 1, "title": "v1.0", "state": "closed"}}, "comment": {"body": "You are totally right! I'll get this fixed right away.", "user": {"login": "Codertocat"}}}`;

export const FILTER_CASES: FilterCase[] = [
  // --- empty filter, AND, omitted keys ---
  { name: 'empty filter matches an object body', filter: {}, payload: '{"action":"opened"}', matches: true },
  { name: 'empty filter matches a string body', filter: {}, payload: '"hello"', matches: true },
  { name: 'empty filter matches a null body', filter: {}, payload: 'null', matches: true },
  { name: 'empty filter matches an array body', filter: {}, payload: '[1,2]', matches: true },
  { name: 'an omitted key places no condition', filter: { action: 'opened' }, payload: '{"action":"opened","number":7}', matches: true },
  { name: 'every key must match (AND): both hold', filter: { action: 'opened', number: 2 }, payload: '{"action":"opened","number":2}', matches: true },
  { name: 'every key must match (AND): the second fails', filter: { action: 'opened', number: 2 }, payload: '{"action":"opened","number":3}', matches: false, path: ['number'] },
  { name: 'the first failing key in filter order is reported', filter: { a: 1, b: 2 }, payload: '{"a":0,"b":0}', matches: false, path: ['a'] },

  // --- scalar, bare list, in, not_in ---
  { name: 'scalar equals', filter: { action: 'opened' }, payload: '{"action":"opened"}', matches: true },
  { name: 'scalar differs', filter: { action: 'opened' }, payload: '{"action":"closed"}', matches: false, path: ['action'] },
  { name: 'bare list: the field holds the second value', filter: { action: ['opened', 'reopened'] }, payload: '{"action":"reopened"}', matches: true },
  { name: 'bare list: the field holds none', filter: { action: ['opened', 'reopened'] }, payload: '{"action":"closed"}', matches: false, path: ['action'] },
  { name: 'in: the field holds one', filter: { action: { in: ['opened', 'reopened'] } }, payload: '{"action":"opened"}', matches: true },
  { name: 'in: the field holds none', filter: { action: { in: ['opened', 'reopened'] } }, payload: '{"action":"closed"}', matches: false, path: ['action'] },
  { name: 'not_in: the value is listed', filter: { ref: { not_in: ['main', 'dev'] } }, payload: '{"ref":"main"}', matches: false, path: ['ref'] },
  { name: 'not_in: the value is not listed', filter: { ref: { not_in: ['main', 'dev'] } }, payload: '{"ref":"feature"}', matches: true },
  { name: 'not_in: a missing field holds none', filter: { ref: { not_in: ['main'] } }, payload: '{}', matches: true },
  { name: 'not_in: null is a value, unlisted', filter: { ref: { not_in: ['main'] } }, payload: '{"ref":null}', matches: true },
  { name: 'not_in: null is a value, listed', filter: { ref: { not_in: [null] } }, payload: '{"ref":null}', matches: false, path: ['ref'] },
  { name: 'not_in: an empty list places no condition', filter: { ref: { not_in: [] } }, payload: '{"ref":"main"}', matches: true },

  // --- exists; present vs missing vs null vs empty ---
  { name: 'exists true: present', filter: { label: { exists: true } }, payload: '{"label":"bug"}', matches: true },
  { name: 'exists true: missing', filter: { label: { exists: true } }, payload: '{}', matches: false, path: ['label'] },
  { name: 'exists false: missing', filter: { label: { exists: false } }, payload: '{}', matches: true },
  { name: 'exists false: present', filter: { label: { exists: false } }, payload: '{"label":"bug"}', matches: false, path: ['label'] },
  { name: 'exists true: null is present', filter: { label: { exists: true } }, payload: '{"label":null}', matches: true },
  { name: 'exists true: [] is present', filter: { label: { exists: true } }, payload: '{"label":[]}', matches: true },
  { name: 'exists true: {} is present', filter: { label: { exists: true } }, payload: '{"label":{}}', matches: true },
  { name: 'exists false: null is present', filter: { label: { exists: false } }, payload: '{"label":null}', matches: false, path: ['label'] },
  { name: 'exists false: "" is present', filter: { label: { exists: false } }, payload: '{"label":""}', matches: false, path: ['label'] },
  { name: 'a missing field does not equal a scalar', filter: { action: 'opened' }, payload: '{}', matches: false, path: ['action'] },
  { name: 'a missing field does not equal null', filter: { action: null }, payload: '{}', matches: false, path: ['action'] },
  { name: 'null equals null', filter: { action: null }, payload: '{"action":null}', matches: true },
  { name: 'null is one of [null, "x"]', filter: { action: [null, 'x'] }, payload: '{"action":null}', matches: true },
  { name: 'null does not equal "x"', filter: { action: 'x' }, payload: '{"action":null}', matches: false, path: ['action'] },
  { name: 'the empty string is a value', filter: { a: '' }, payload: '{"a":""}', matches: true },
  { name: 'the empty string does not equal a missing field', filter: { a: '' }, payload: '{}', matches: false, path: ['a'] },

  // --- strict JSON comparison ---
  { name: 'strict: "1" does not equal 1', filter: { n: '1' }, payload: '{"n":1}', matches: false, path: ['n'] },
  { name: 'strict: 1 does not equal "1"', filter: { n: 1 }, payload: '{"n":"1"}', matches: false, path: ['n'] },
  { name: 'strict: 1 equals 1.0', filter: { n: 1 }, payload: '{"n":1.0}', matches: true },
  { name: 'strict: 100 equals 1e2', filter: { n: [100] }, payload: '{"n":1e2}', matches: true },
  { name: 'strict: 1 does not equal 1.5', filter: { n: 1 }, payload: '{"n":1.5}', matches: false, path: ['n'] },
  { name: 'strict: true does not equal "true"', filter: { draft: true }, payload: '{"draft":"true"}', matches: false, path: ['draft'] },
  { name: 'strict: false does not equal 0', filter: { draft: false }, payload: '{"draft":0}', matches: false, path: ['draft'] },
  { name: 'strict: null does not equal "null"', filter: { a: null }, payload: '{"a":"null"}', matches: false, path: ['a'] },
  { name: 'strings are case-sensitive', filter: { action: 'opened' }, payload: '{"action":"Opened"}', matches: false, path: ['action'] },
  { name: 'strings compare exactly (no trimming)', filter: { action: 'opened' }, payload: '{"action":"opened "}', matches: false, path: ['action'] },

  // --- array-valued fields ---
  { name: 'array field: a scalar filter matches when any element equals it', filter: { tags: 'bug' }, payload: '{"tags":["ui","bug"]}', matches: true },
  { name: 'array field: a bare list matches when any element is listed', filter: { tags: ['bug', 'urgent'] }, payload: '{"tags":["ui","urgent"]}', matches: true },
  { name: 'array field: in fails when no element is listed', filter: { tags: { in: ['bug'] } }, payload: '{"tags":["ui","docs"]}', matches: false, path: ['tags'] },
  { name: 'array field: not_in fails when any element is listed', filter: { tags: { not_in: ['wip'] } }, payload: '{"tags":["ui","wip"]}', matches: false, path: ['tags'] },
  { name: 'array field: not_in holds when no element is listed', filter: { tags: { not_in: ['wip'] } }, payload: '{"tags":["ui"]}', matches: true },
  { name: 'array field: an empty array holds nothing for in', filter: { tags: { in: ['bug'] } }, payload: '{"tags":[]}', matches: false, path: ['tags'] },
  { name: 'array field: an empty array holds nothing for not_in', filter: { tags: { not_in: ['bug'] } }, payload: '{"tags":[]}', matches: true },
  { name: 'array field: nested arrays are not flattened', filter: { tags: 'bug' }, payload: '{"tags":[["bug"]]}', matches: false, path: ['tags'] },
  { name: 'array field: object elements never equal a scalar', filter: { tags: 'bug' }, payload: '{"tags":[{"name":"bug"}]}', matches: false, path: ['tags'] },
  { name: 'array field: elements compare strictly', filter: { ids: [1] }, payload: '{"ids":["1"]}', matches: false, path: ['ids'] },
  { name: 'object field: never equals a scalar', filter: { a: 'x' }, payload: '{"a":{"x":1}}', matches: false, path: ['a'] },
  { name: 'object field: holds none of a not_in list', filter: { a: { not_in: ['x'] } }, payload: '{"a":{"x":1}}', matches: true },

  // --- nested objects ---
  { name: 'nested: descends into the field', filter: { pr: { base: { ref: 'main' } } }, payload: '{"pr":{"base":{"ref":"main"}}}', matches: true },
  { name: 'nested: the inner key fails', filter: { pr: { base: { ref: 'main' } } }, payload: '{"pr":{"base":{"ref":"dev"}}}', matches: false, path: ['pr', 'base', 'ref'] },
  { name: 'nested: against a string does not match', filter: { pr: { number: 1 } }, payload: '{"pr":"1"}', matches: false, path: ['pr'] },
  { name: 'nested: against null does not match', filter: { pr: { number: 1 } }, payload: '{"pr":null}', matches: false, path: ['pr'] },
  { name: 'nested: against a missing field does not match', filter: { pr: { number: 1 } }, payload: '{}', matches: false, path: ['pr'] },
  { name: 'nested: an empty nested filter needs an object', filter: { pr: {} }, payload: '{"pr":{}}', matches: true },
  { name: 'nested: an empty nested filter against a number', filter: { pr: {} }, payload: '{"pr":2}', matches: false, path: ['pr'] },
  { name: 'nested: exists false inside a missing parent does not match', filter: { pr: { draft: { exists: false } } }, payload: '{}', matches: false, path: ['pr'] },
  { name: 'nested: not_in inside an object without that key', filter: { pr: { draft: { not_in: [true] } } }, payload: '{"pr":{}}', matches: true },

  // --- arrays of objects ---
  { name: 'array of objects: any element matching is enough', filter: { labels: { name: 'bug' } }, payload: '{"labels":[{"name":"ui"},{"name":"bug"}]}', matches: true },
  { name: 'array of objects: no element matches', filter: { labels: { name: 'bug' } }, payload: '{"labels":[{"name":"ui"},{"name":"docs"}]}', matches: false, path: ['labels', '[]', 'name'] },
  { name: 'array of objects: the element that got furthest is reported', filter: { labels: { name: 'bug', color: 'red' } }, payload: '{"labels":[{"name":"ui"},{"name":"bug","color":"blue"}]}', matches: false, path: ['labels', '[]', 'color'] },
  { name: 'array of objects: one element must satisfy every key', filter: { items: { a: 1, b: 1 } }, payload: '{"items":[{"a":1,"b":2},{"a":2,"b":1}]}', matches: false, path: ['items', '[]', 'b'] },
  { name: 'array of objects: scalar elements are skipped', filter: { items: { a: 1 } }, payload: '{"items":["a",null,{"a":1}]}', matches: true },
  { name: 'array of objects: an array with no object elements', filter: { items: { a: 1 } }, payload: '{"items":["a",1]}', matches: false, path: ['items'] },
  { name: 'array of objects: an empty array', filter: { items: {} }, payload: '{"items":[]}', matches: false, path: ['items'] },
  { name: 'array of objects: an empty nested filter matches any object element', filter: { items: {} }, payload: '{"items":[1,{}]}', matches: true },
  { name: 'array of objects: arrays of arrays are not descended', filter: { items: { a: 1 } }, payload: '{"items":[[{"a":1}]]}', matches: false, path: ['items'] },
  { name: 'array of objects: operators apply inside elements', filter: { items: { a: { not_in: [1] }, b: { exists: true } } }, payload: '{"items":[{"a":1,"b":0},{"a":2,"b":0}]}', matches: true },

  // --- operator combinations (AND) ---
  { name: 'in + not_in + exists all hold', filter: { ref: { in: ['main', 'dev'], not_in: ['wip'], exists: true } }, payload: '{"ref":"dev"}', matches: true },
  { name: 'in holds on one element, not_in fails on another', filter: { tags: { in: ['a'], not_in: ['c'] } }, payload: '{"tags":["a","c"]}', matches: false, path: ['tags'] },
  { name: 'exists false + not_in on a missing field', filter: { ref: { exists: false, not_in: ['main'] } }, payload: '{}', matches: true },
  { name: 'exists true + not_in on a missing field', filter: { ref: { exists: true, not_in: ['main'] } }, payload: '{}', matches: false, path: ['ref'] },
  { name: 'exists false + in can never match', filter: { ref: { exists: false, in: ['main'] } }, payload: '{}', matches: false, path: ['ref'] },
  { name: 'exists true + in: present but not listed', filter: { ref: { exists: true, in: ['main'] } }, payload: '{"ref":null}', matches: false, path: ['ref'] },

  // --- literal keys, own properties only ---
  { name: 'a dotted key is one key, not a path', filter: { 'a.b': 1 }, payload: '{"a":{"b":1}}', matches: false, path: ['a.b'] },
  { name: 'a dotted key matches the literal key', filter: { 'a.b': 1 }, payload: '{"a.b":1}', matches: true },
  { name: '__proto__ is not inherited: exists true', filter: { ['__proto__']: { exists: true } }, payload: '{"a":1}', matches: false, path: ['__proto__'] },
  { name: '__proto__ is not inherited: exists false', filter: { ['__proto__']: { exists: false } }, payload: '{"a":1}', matches: true },
  { name: '__proto__ is an ordinary key with a value', filter: { ['__proto__']: 'x' }, payload: '{"__proto__":"x"}', matches: true },
  { name: '__proto__ as a nested filter', filter: { ['__proto__']: { polluted: true } }, payload: '{"__proto__":{"polluted":true}}', matches: true },
  { name: '__proto__ nested filter against a body without it', filter: { ['__proto__']: {} }, payload: '{}', matches: false, path: ['__proto__'] },
  { name: 'constructor is not inherited', filter: { constructor: { exists: true } }, payload: '{}', matches: false, path: ['constructor'] },
  { name: 'constructor.name is not looked up through the prototype', filter: { constructor: { name: 'Object' } }, payload: '{}', matches: false, path: ['constructor'] },
  { name: 'toString is not inherited', filter: { toString: { exists: false } }, payload: '{}', matches: true },
  { name: 'toString is an ordinary key', filter: { toString: 'x' }, payload: '{"toString":"x"}', matches: true },
  { name: 'hasOwnProperty is an ordinary key', filter: { hasOwnProperty: { exists: true } }, payload: '{"hasOwnProperty":null}', matches: true },
  { name: 'an in key of the body is an ordinary key under a nested filter', filter: { x: { exists: true } }, payload: '{"x":{"in":[1]}}', matches: true },

  // --- bodies that are not objects ---
  { name: 'string body: a value condition fails', filter: { action: 'opened' }, payload: '"opened"', matches: false, path: ['action'] },
  { name: 'string body: exists false holds', filter: { action: { exists: false } }, payload: '"opened"', matches: true },
  { name: 'string body: not_in holds', filter: { action: { not_in: ['opened'] } }, payload: '"opened"', matches: true },
  { name: 'string body: exists true fails', filter: { action: { exists: true } }, payload: '"opened"', matches: false, path: ['action'] },
  { name: 'string body: a nested filter fails', filter: { pr: {} }, payload: '"x"', matches: false, path: ['pr'] },
  { name: 'string body: length is not a field', filter: { length: { exists: true } }, payload: '"abc"', matches: false, path: ['length'] },
  { name: 'number body: a value condition fails', filter: { n: 42 }, payload: '42', matches: false, path: ['n'] },
  { name: 'boolean body: not_in holds', filter: { b: { not_in: [true] } }, payload: 'true', matches: true },
  { name: 'null body: not_in and exists false hold together', filter: { a: { not_in: [1] }, b: { exists: false } }, payload: 'null', matches: true },
  { name: 'null body: a value condition fails', filter: { a: null }, payload: 'null', matches: false, path: ['a'] },
  { name: 'array body: its elements are not searched', filter: { a: 1 }, payload: '[{"a":1}]', matches: false, path: ['a'] },
  { name: 'array body: length is not a field', filter: { length: 1 }, payload: '["x"]', matches: false, path: ['length'] },
  { name: 'array body: exists false holds', filter: { a: { exists: false } }, payload: '[{"a":1}]', matches: true },

  // --- real GitHub payloads ---
  { name: 'github pull_request.labeled: labeled with bug', filter: { action: 'labeled', pull_request: { labels: { name: ['bug', 'urgent'] } } }, payload: PR_LABELED, matches: true },
  { name: 'github pull_request.labeled: no urgent label', filter: { pull_request: { labels: { name: 'urgent' } } }, payload: PR_LABELED, matches: false, path: ['pull_request', 'labels', '[]', 'name'] },
  { name: 'github pull_request.labeled: base ref is not in not_in', filter: { pull_request: { base: { ref: { not_in: ['main', 'master'] } } } }, payload: PR_LABELED, matches: false, path: ['pull_request', 'base', 'ref'] },
  { name: 'github pull_request.labeled: base master, not a draft', filter: { pull_request: { base: { ref: 'master' }, draft: false } }, payload: PR_LABELED, matches: true },
  { name: 'github pull_request.labeled: merged_by null is present', filter: { pull_request: { merged_by: { exists: true } } }, payload: PR_LABELED, matches: true },
  { name: 'github pull_request.labeled: not merged', filter: { pull_request: { merged: true } }, payload: PR_LABELED, matches: false, path: ['pull_request', 'merged'] },
  { name: 'github pull_request.labeled: requested reviewer', filter: { pull_request: { requested_reviewers: { login: 'octocat' } } }, payload: PR_LABELED, matches: true },
  { name: 'github pull_request.labeled: label id compares as a number', filter: { label: { name: 'bug' }, pull_request: { labels: { id: '1362934389' } } }, payload: PR_LABELED, matches: false, path: ['pull_request', 'labels', '[]', 'id'] },
  { name: 'github workflow_run.completed: only failures', filter: { action: 'completed', workflow_run: { conclusion: ['failure', 'timed_out'] } }, payload: WORKFLOW_RUN_COMPLETED, matches: false, path: ['workflow_run', 'conclusion'] },
  { name: 'github workflow_run.completed: success on master', filter: { workflow_run: { conclusion: 'success', head_branch: 'master' } }, payload: WORKFLOW_RUN_COMPLETED, matches: true },
  { name: 'github workflow_run.completed: no pull requests', filter: { workflow_run: { pull_requests: { number: { exists: true } } } }, payload: WORKFLOW_RUN_COMPLETED, matches: false, path: ['workflow_run', 'pull_requests'] },
  { name: 'github workflow_run.completed: a key with dots and slashes', filter: { workflow: { path: '.github/workflows/test.yml' } }, payload: WORKFLOW_RUN_COMPLETED, matches: true },
  { name: 'github push: a deleted tag', filter: { ref: { in: ['refs/tags/simple-tag'] }, deleted: true }, payload: PUSH, matches: true },
  { name: 'github push: head_commit is null', filter: { head_commit: { message: { exists: true } } }, payload: PUSH, matches: false, path: ['head_commit'] },
  { name: 'github push: base_ref null is not "null"', filter: { base_ref: 'null' }, payload: PUSH, matches: false, path: ['base_ref'] },
  { name: 'github issue_comment.created: on an issue, not a pull request', filter: { action: 'created', issue: { pull_request: { exists: false }, labels: { name: 'bug' } } }, payload: ISSUE_COMMENT_CREATED, matches: true },
  { name: 'github issue_comment.created: comment body is case-sensitive', filter: { comment: { body: "you are totally right! i'll get this fixed right away." } }, payload: ISSUE_COMMENT_CREATED, matches: false, path: ['comment', 'body'] },
];

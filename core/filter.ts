/**
 * Payload filters (docs/filters.md): the grammar check the compiler runs, the evaluator the runtime
 * runs on every accepted delivery, and the explanation of a non-match for Test filter
 * (docs/automations.md). Pure: no I/O, no clock. The exact rules and decisions are in
 * docs/filters.md.
 */
export * from './filter/common.ts';
export { checkFilter } from './filter/check.ts';
export { matchFilter } from './filter/evaluate.ts';
export { explainFilter, formatPath } from './filter/explain.ts';

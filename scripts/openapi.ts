/**
 * `npm run openapi`: writes schemas/openapi.json, the committed copy of the OpenAPI document that
 * the runtime serves at GET /api/v1/openapi.json (docs/api.md#openapi). Run it after changing a
 * schema under schemas/api/ or an operation in core/openapi.ts; test/core/openapi.test.ts fails
 * while the copy is stale.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openApiText } from '../core/openapi.ts';

const target = resolve(import.meta.dirname, '../schemas/openapi.json');
writeFileSync(target, openApiText());
process.stdout.write(`wrote ${target}\n`);

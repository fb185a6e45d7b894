import { Ajv2020 } from 'ajv/dist/2020.js';

/**
 * A 2020-12 Ajv (OpenAPI 3.1's dialect) holding the document, so `openapi#/components/schemas/X`
 * compiles with its $refs resolved inside the document; the document's own keys are annotations.
 */
export function documentAjv(doc: Record<string, unknown>): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allowUnionTypes: true });
  for (const key of Object.keys(doc)) ajv.addKeyword(key);
  ajv.addSchema(doc, 'openapi');
  return ajv;
}

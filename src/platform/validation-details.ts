// Ajv errors -> the `details` of a 422: `{ field, message }` with readable field paths such as
// `items[0].quantity`, `query.limit`, `path.id`. Not HTTP's alone: the request validator (src/http/api.ts), the
// theme document and settings rules (src/domain/themes/bases.ts) and the fixture checker word their problems
// through this one function, so a field path and a message read the same wherever a schema said no.
import type { ErrorObject } from 'ajv';
import type { ErrorDetail } from '../errors';

function fieldPath(instancePath: string, extra?: string): string {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  const [where, ...rest] = parts;
  let path = where === 'requestBody' ? '' : where === 'header' ? 'header' : (where ?? '');
  for (const p of rest) path += /^\d+$/.test(p) ? `[${p}]` : path ? `.${p}` : p;
  return path || 'body';
}

/** The contract's bound on `details` (ErrorObject.details maxItems): a body of 10 000 bad items lists the first. */
export const maxDetails = 1000;

export function validationDetails(errors: ErrorObject[]): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const e of errors) {
    if (details.length === maxDetails) break;
    let detail: ErrorDetail;
    if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      detail =
        missing === 'requestBody'
          ? { field: 'body', message: 'a request body is required' }
          : { field: fieldPath(e.instancePath, missing), message: 'is required' };
    } else if (e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties') {
      const extra = e.params as { additionalProperty?: string; unevaluatedProperty?: string };
      detail = {
        field: fieldPath(e.instancePath, extra.additionalProperty ?? extra.unevaluatedProperty),
        message: 'is not a known field',
      };
    } else if (e.keyword === 'enum') {
      detail = {
        field: fieldPath(e.instancePath),
        message: `must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`,
      };
    } else if (e.keyword === 'parse') {
      detail = { field: fieldPath(e.instancePath), message: e.message ?? 'is not valid JSON' };
    } else {
      detail = { field: fieldPath(e.instancePath), message: e.message ?? 'is not valid' };
    }
    const key = `${detail.field}\u0000${detail.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      details.push(detail);
    }
  }
  return details;
}

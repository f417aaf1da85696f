// The error catalog (src/errors.ts) and the contract (openapi.yaml) name the same codes, and every error response
// of every operation only lists codes whose catalog status is that response's status.
import { errorCatalog } from '../../src/errors';
import { loadSpec } from '../../src/spec';

const spec = loadSpec();

function resolve(node: any): any {
  let value = node;
  for (let i = 0; value?.$ref && i < 10; i++) {
    value = (value.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: any, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
  }
  return value;
}

/** The `code` enum of an error response schema (per-response envelope: error.allOf[1].properties.code.enum). */
function codesOf(schema: any): string[] | undefined {
  const s = resolve(schema);
  const error = resolve(s?.properties?.error);
  if (!error) return undefined;
  // allOf: the generic ErrorObject (code: every ErrorCode) narrowed by the response's own enum; the narrowest applies.
  const parts = [error, ...(error.allOf ?? []).map(resolve)];
  const enums = parts
    .map((part) => resolve(part?.properties?.code)?.enum as string[] | undefined)
    .filter((e): e is string[] => !!e);
  return enums.sort((a, b) => a.length - b.length)[0];
}

test('the ErrorCode enum of openapi.yaml and errorCatalog name the same codes', () => {
  const inSpec = [...(spec.components.schemas.ErrorCode.enum as string[])].sort();
  const inCatalog = Object.keys(errorCatalog).sort();
  expect(inSpec).toEqual(inCatalog);
});

test('every error response lists only codes whose catalog status is the response status', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item as Record<string, any>)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      for (const [status, response] of Object.entries(op.responses as Record<string, unknown>)) {
        if (!/^[45]\d\d$/.test(status)) continue;
        const schema = resolve(response)?.content?.['application/json']?.schema;
        if (resolve(schema) === spec.components.schemas.OAuthError) continue; // the token endpoint's OAuth errors
        const codes = codesOf(schema);
        if (!codes) {
          problems.push(`${op.operationId} ${status}: no code enum`);
          continue;
        }
        for (const code of codes) {
          checked++;
          const entry = (errorCatalog as Record<string, { status: number }>)[code];
          if (!entry) problems.push(`${op.operationId} ${status}: ${code} is not in errorCatalog`);
          else if (String(entry.status) !== status)
            problems.push(
              `${op.operationId} ${status}: ${code} has status ${entry.status} in errorCatalog (${method.toUpperCase()} ${path})`,
            );
        }
      }
    }
  }
  expect(problems).toEqual([]);
  expect(checked).toBeGreaterThan(85 * 5);
});

test('every operation declares 401/403 (unless public), 422, 429, 500, 501 and 503', () => {
  const missing: string[] = [];
  for (const item of Object.values(spec.paths)) {
    for (const [method, op] of Object.entries(item as Record<string, any>)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const isPublic = Array.isArray(op.security) && op.security.length === 0;
      const needed = [...(isPublic ? [] : ['401', '403']), '422', '429', '500', '501', '503'];
      if (['post', 'put', 'patch', 'delete'].includes(method)) needed.push('409');
      if (op.requestBody) needed.push('413', '415');
      for (const s of needed) if (!op.responses[s]) missing.push(`${op.operationId} ${s}`);
    }
  }
  expect(missing).toEqual([]);
});

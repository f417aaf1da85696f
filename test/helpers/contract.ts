// Checks a response against openapi.yaml: the status must be declared for the operation, the body must match its
// schema, and every required header must be present with a valid value. Every response the suite receives goes
// through here (see test-app.ts), so server and contract cannot drift apart unnoticed.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { OpenAPIRouter } from 'openapi-backend';
import { loadSpec, type SpecDocument } from '../../src/spec';

const spec: SpecDocument = loadSpec();
const router = new OpenAPIRouter({ definition: spec as never, apiRoot: '/dev/v1' });
const ajv = new Ajv2020({ allErrors: true, strict: false, validateSchema: false });
addFormats(ajv);
ajv.addSchema(spec as object, 'spec');
const compiled = new Map<string, ValidateFunction>();

function pointer(path: string[]): string {
  return `#/${path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

/** Follows `$ref`s of response and header objects (not schemas: Ajv resolves those). Returns the JSON pointer too. */
function resolve(obj: any, at: string[]): { value: any; at: string[] } {
  let value = obj;
  let path = at;
  for (let i = 0; value && typeof value.$ref === 'string' && i < 10; i++) {
    path = (value.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    value = path.reduce((o: any, k) => o?.[k], spec);
  }
  return { value, at: path };
}

function validatorAt(path: string[]): ValidateFunction {
  const ref = `spec${pointer(path)}`;
  let v = compiled.get(ref);
  if (!v) {
    v = ajv.compile({ $ref: ref });
    compiled.set(ref, v);
  }
  return v;
}

export interface ResponseLike {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  text?: string;
}

export class ContractViolation extends Error {}

function coerceHeader(value: string, schema: any): unknown {
  const t = schema?.type;
  if ((t === 'integer' || t === 'number') && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  return value;
}

/** Throws a ContractViolation describing every way the response breaks the contract. */
export function assertMatchesContract(method: string, url: string, res: ResponseLike): void {
  const path = url.split('?')[0] ?? url;
  if (!path.startsWith('/dev/v1')) return; // docs, health: outside the contract
  const problems: string[] = [];
  let responseRef: { value: any; at: string[] } | undefined;
  let where = `${method.toUpperCase()} ${path} -> ${res.status}`;
  let decodable = true;
  try {
    decodeURIComponent(path);
  } catch {
    decodable = false;
  }
  const operation =
    decodable &&
    (router.matchOperation({
      method: method.toLowerCase(),
      path,
      headers: {},
      query: {},
    } as never) as any);
  if (operation) {
    const opPath = ['paths', operation.path, operation.method];
    where = `${operation.operationId} -> ${res.status}`;
    const responses = (operation as any).responses ?? {};
    const key = [String(res.status), `${String(res.status)[0]}XX`, 'default'].find((k) => responses[k]);
    if (!key) problems.push(`status ${res.status} is not declared (declared: ${Object.keys(responses).join(', ')})`);
    else responseRef = resolve(responses[key], [...opPath, 'responses', key]);
  } else {
    // No operation: the router's own 404 / 405 answers.
    const name = res.status === 405 ? 'MethodNotAllowed' : res.status === 404 ? 'NotFound' : undefined;
    if (!name) problems.push(`status ${res.status} for a path with no operation`);
    else responseRef = resolve(spec.components.responses[name], ['components', 'responses', name]);
  }
  if (responseRef) {
    const response = responseRef.value;
    for (const [name, headerObj] of Object.entries<any>(response.headers ?? {})) {
      const header = resolve(headerObj, [...responseRef.at, 'headers', name]);
      const raw = res.headers[name.toLowerCase()];
      if (raw === undefined) {
        if (header.value.required) problems.push(`required header ${name} is missing`);
        continue;
      }
      const value = coerceHeader(Array.isArray(raw) ? raw.join(', ') : raw, header.value.schema);
      const validate = validatorAt([...header.at, 'schema']);
      if (header.value.schema && !validate(value))
        problems.push(`header ${name}=${String(raw)}: ${ajv.errorsText(validate.errors)}`);
    }
    const json = response.content?.['application/json'];
    if (json?.schema) {
      const type = String(res.headers['content-type'] ?? '');
      if (!type.startsWith('application/json')) problems.push(`content-type is "${type}", expected application/json`);
      const validate = validatorAt([...responseRef.at, 'content', 'application/json', 'schema']);
      if (!validate(res.body)) problems.push(`body: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
    } else if (response.content?.['text/html']?.schema) {
      // The hosted consent page (GET /oauth/authorize): an HTML string.
      const type = String(res.headers['content-type'] ?? '');
      if (!type.startsWith('text/html')) problems.push(`content-type is "${type}", expected text/html`);
      const validate = validatorAt([...responseRef.at, 'content', 'text/html', 'schema']);
      if (!validate(res.text ?? '')) problems.push(`body: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
    } else if (res.text) {
      problems.push('the contract declares no body, but one was sent');
    }
  }
  if (problems.length) {
    throw new ContractViolation(
      `Response breaks openapi.yaml (${where}):\n  - ${problems.join('\n  - ')}\n  body: ${JSON.stringify(res.body)?.slice(0, 500)}`,
    );
  }
}

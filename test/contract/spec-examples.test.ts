// Every example in openapi.yaml (media types, parameters, headers, schemas, webhook payloads) must satisfy the
// schema it illustrates, so integrators and generated SDK docs never show a payload the server would reject or
// never send. Ajv 2020 + ajv-formats, as the server validates; `$ref`s are resolved by Ajv against the whole document.
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { loadSpec } from '../../src/spec';

const spec = loadSpec();
const ajv = new Ajv2020({ allErrors: true, strict: false, validateSchema: false });
addFormats(ajv);
ajv.addSchema(spec as object, 'spec');

const escape = (p: string) => p.replace(/~/g, '~0').replace(/\//g, '~1');
const compiled = new Map<string, ValidateFunction>();
function validatorAt(pointer: string[]): ValidateFunction {
  const ref = `spec#/${pointer.map(escape).join('/')}`;
  let v = compiled.get(ref);
  if (!v) compiled.set(ref, (v = ajv.compile({ $ref: ref })));
  return v;
}

interface Example {
  where: string;
  schemaAt: string[];
  value: unknown;
}

const schemaKeys = ['type', 'properties', 'enum', 'const', 'allOf', 'oneOf', 'anyOf', 'items', '$ref'];

/** Walks the document; never descends into example values themselves. */
function collect(node: unknown, at: string[], out: Example[]): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    node.forEach((n, i) => collect(n, [...at, String(i)], out));
    return;
  }
  const obj = node as Record<string, unknown>;
  const hasSchema = obj.schema !== undefined && typeof obj.schema === 'object';
  const isSchema = !hasSchema && schemaKeys.some((k) => k in obj);
  const target = hasSchema ? [...at, 'schema'] : isSchema ? at : undefined;
  if (target) {
    if ('example' in obj) out.push({ where: [...at, 'example'].join('/'), schemaAt: target, value: obj.example });
    if (hasSchema && obj.examples && typeof obj.examples === 'object' && !Array.isArray(obj.examples)) {
      for (const [name, ex] of Object.entries(obj.examples as Record<string, { value?: unknown }>)) {
        if (ex && 'value' in ex)
          out.push({ where: [...at, 'examples', name].join('/'), schemaAt: target, value: ex.value });
      }
    }
    if (isSchema && Array.isArray(obj.examples)) {
      obj.examples.forEach((value, i) =>
        out.push({ where: [...at, 'examples', String(i)].join('/'), schemaAt: target, value }),
      );
    }
  }
  for (const [key, value] of Object.entries(obj)) {
    if (key === 'example' || key === 'examples' || key === 'default' || key === 'const' || key === 'enum') continue;
    collect(value, [...at, key], out);
  }
}

const examples: Example[] = [];
for (const part of ['paths', 'webhooks', 'components'] as const) collect(spec[part], [part], examples);

describe('openapi.yaml examples', () => {
  test('there are examples to check', () => {
    expect(examples.length).toBeGreaterThan(150);
  });

  test.each(examples.map((e) => [e.where, e] as const))('%s matches its schema', (_where, example) => {
    const validate = validatorAt(example.schemaAt);
    const ok = validate(example.value);
    if (!ok) throw new Error(`${example.where}: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
  });

  test('every operation has a success response example, and a request example when it has a body', () => {
    const missing: string[] = [];
    for (const [path, item] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(item as Record<string, any>)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        const body = op.requestBody?.content?.['application/json'];
        if (body && body.example === undefined && body.examples === undefined)
          missing.push(`${op.operationId} request`);
        const ok = Object.entries(op.responses as Record<string, any>).find(([status]) => /^2\d\d$/.test(status));
        const media = ok?.[1].content && (Object.values(ok[1].content)[0] as { example?: unknown; examples?: unknown });
        if (!media || (media.example === undefined && media.examples === undefined))
          missing.push(`${op.operationId} response (${path})`);
      }
    }
    expect(missing).toEqual([]);
  });
});

// Lazily compiled validators (src/http/validators.ts) answer exactly as compiled ones, errors included; the
// server's background pass compiles every validator created while it collected, and reports a schema that fails.
import Ajv2020 from 'ajv/dist/2020';
import { collectValidators, lazyAjvFactory } from '../../src/http/validators';

const schema = {
  type: 'object',
  properties: { limit: { type: 'integer', minimum: 1, maximum: 100 }, email: { type: 'string', format: 'email' } },
  required: ['limit'],
  additionalProperties: false,
};
const options = { allErrors: true, strict: false, coerceTypes: true };

test('a lazy validator gives the result and the errors of an eagerly compiled one', () => {
  const lazy = (lazyAjvFactory()(undefined, options) as Ajv2020).compile(schema);
  const eager = lazyAjvFactory()(undefined, options) as Ajv2020;
  const compiled = Object.getPrototypeOf(eager).compile.call(eager, schema);
  for (const data of [{ limit: '5' }, { limit: 0, email: 'nope' }, { extra: true }, { limit: 5, email: 'a@b.co' }]) {
    expect([lazy({ ...data }), lazy.errors ?? null]).toEqual([compiled({ ...data }), compiled.errors ?? null]);
  }
});

test('one Ajv per option set', () => {
  const customize = lazyAjvFactory();
  expect(customize(undefined, options)).toBe(customize(undefined, { ...options }));
  expect(customize(undefined, options)).not.toBe(customize(undefined, { ...options, coerceTypes: false }));
});

test('the background pass compiles what was created while collecting, and reports a broken schema', async () => {
  const collector = collectValidators();
  const ajv = lazyAjvFactory()(undefined, options) as Ajv2020;
  let compiles = 0; // a keyword whose compile step counts the schemas Ajv compiles
  ajv.addKeyword({ keyword: 'x-counted', compile: () => (compiles++, () => true) });
  const validators = Array.from({ length: 20 }, (_, i) =>
    ajv.compile({ ...schema, title: `s${i}`, 'x-counted': true }),
  );
  expect(compiles).toBe(0);
  // While the server is busy the pass waits; once it is not, it compiles everything.
  let busy = true;
  const pass = collector.compileInBackground({ sliceMs: 1, busy: () => busy, busyWaitMs: 5 });
  await new Promise((r) => setTimeout(r, 60));
  expect(compiles).toBe(0);
  busy = false;
  await pass;
  expect(compiles).toBe(20);
  expect(validators[3]!({ limit: 1 })).toBe(true);
  expect(compiles).toBe(20); // compiled once, not again on use

  const failing = collectValidators();
  ajv.compile({ type: 'object', properties: { a: { $ref: '#/nowhere' } } });
  await expect(failing.compileInBackground()).rejects.toThrow(/nowhere|reference/i);
});

// The dispatcher must reach the same handler with the same context as openapi-backend's own handleRequest: the
// same security results, the same 401, the same validation errors and coerced request, the same 501. Each request
// below goes through both, on two backends built alike, and what the handlers saw is compared.
import OpenAPIBackend, { type Context, type Document } from 'openapi-backend';
import { createDispatcher } from '../../src/http/dispatch';

const definition = {
  openapi: '3.1.0',
  info: { title: 'dispatch', version: '1' },
  components: {
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer' },
      oauth2: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: '/token', scopes: {} } } },
    },
  },
  security: [{ bearerAuth: [] }, { oauth2: [] }],
  paths: {
    '/things/{id}': {
      get: {
        operationId: 'getThing',
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
          { name: 'tags', in: 'query', schema: { type: 'array', items: { type: 'string' } } },
          { name: 'limit', in: 'query', schema: { type: 'integer', default: 10, maximum: 50 } },
          { name: 'filter', in: 'query', content: { 'application/json': { schema: { type: 'object' } } } },
        ],
        responses: { 200: { description: 'ok' } },
      },
      put: {
        operationId: 'putThing',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
            },
          },
        },
        responses: { 200: { description: 'ok' } },
      },
    },
    '/open': { post: { operationId: 'open', security: [], responses: { 200: { description: 'ok' } } } },
    '/unbuilt': { get: { operationId: 'unbuilt', responses: { 200: { description: 'ok' } } } },
  },
};

type Seen = Record<string, unknown>;

async function backend() {
  const api = new OpenAPIBackend({
    definition: definition as unknown as Document,
    quick: true,
    strict: true,
    validate: true,
    coerceTypes: true,
    ajvOpts: { allErrors: true, strict: false, useDefaults: true },
  });
  const seen = (kind: string) => (c: Context) =>
    ({
      kind,
      operationId: c.operation?.operationId,
      security: c.security,
      errors: c.validation?.errors?.map((e) => `${e.instancePath} ${e.message}`) ?? null,
      params: c.request.params,
      query: c.request.query,
      body: c.request.requestBody,
    }) as Seen;
  const token = (c: Context) => String(c.request.headers.authorization ?? '');
  api.registerSecurityHandler('bearerAuth', (c: Context) => (token(c) === 'Bearer good' ? { who: 'key' } : false));
  api.registerSecurityHandler('oauth2', (c: Context) => {
    if (token(c) === 'Bearer broken') throw new Error('store down');
    return token(c) === 'Bearer oauth' ? { who: 'oauth' } : undefined;
  });
  api.register({
    getThing: seen('handler'),
    putThing: seen('handler'),
    open: seen('handler'),
    unauthorizedHandler: seen('401'),
    validationFail: seen('400'),
    notImplemented: seen('501'),
  });
  await api.init();
  return api;
}

const requests = [
  { method: 'get', path: '/things/7', query: { tags: 'a', limit: '5' }, headers: { authorization: 'Bearer good' } },
  { method: 'get', path: '/things/7', query: { tags: ['a', 'b'] }, headers: { authorization: 'Bearer oauth' } },
  { method: 'get', path: '/things/x', query: { limit: '99' }, headers: { authorization: 'Bearer good' } },
  { method: 'get', path: '/things/7', query: { filter: '{"a":1}' }, headers: { authorization: 'Bearer good' } },
  { method: 'get', path: '/things/7', query: { filter: '{nope' }, headers: { authorization: 'Bearer good' } },
  { method: 'get', path: '/things/7', query: {}, headers: { authorization: 'Bearer bad' } },
  { method: 'get', path: '/things/7', query: {}, headers: { authorization: 'Bearer broken' } },
  { method: 'get', path: '/things/7', query: {}, headers: {} },
  {
    method: 'put',
    path: '/things/7',
    query: {},
    headers: { authorization: 'Bearer good', 'content-type': 'application/json' },
    body: { name: 'n' },
  },
  {
    method: 'put',
    path: '/things/7',
    query: {},
    headers: { authorization: 'Bearer good', 'content-type': 'application/json' },
    body: { name: 3 },
  },
  {
    method: 'put',
    path: '/things/7',
    query: {},
    headers: { authorization: 'Bearer good', 'content-type': 'application/json' },
    body: '{not json',
  },
  { method: 'post', path: '/open', query: {}, headers: {} },
  { method: 'get', path: '/unbuilt', query: {}, headers: { authorization: 'Bearer good' } },
];

test('every request reaches the same handler with the same context as handleRequest', async () => {
  const [library, ours] = [await backend(), await backend()];
  const dispatch = createDispatcher(ours);
  const kinds = new Set<unknown>();
  for (const req of requests) {
    const copy = () => structuredClone(req) as never;
    const expected = (await library.handleRequest(copy())) as Seen;
    const operation = ours.router.matchOperation(copy(), true)!;
    const actual = (await dispatch(operation, copy())) as Seen;
    // An error object is compared by its message.
    const plain = (s: Seen) => JSON.parse(JSON.stringify(s, (_k, v: unknown) => (v instanceof Error ? v.message : v)));
    expect({ req, seen: plain(actual) }).toEqual({ req, seen: plain(expected) });
    kinds.add(expected.kind);
  }
  // The requests above exercise each outcome.
  expect([...kinds].sort()).toEqual(['400', '401', '501', 'handler']);
});

test('a hook the dispatcher does not run makes it refuse rather than skip it', async () => {
  const api = await backend();
  api.register('postResponseHandler', () => undefined);
  const dispatch = createDispatcher(api);
  const req = { method: 'post', path: '/open', query: {}, headers: {} };
  await expect(dispatch(api.router.matchOperation(req as never, true)!, req as never)).rejects.toThrow(
    /postResponseHandler/,
  );
});

test("a handler registered under the library's status-code alias (400, 501) is the one reached, as in the library", async () => {
  const [library, ours] = [await backend(), await backend()];
  for (const api of [library, ours]) {
    api.register('400', (c: Context) => ({ kind: '400 alias', errors: c.validation?.errors?.length }));
    api.register('501', () => ({ kind: '501 alias' }));
  }
  const dispatch = createDispatcher(ours);
  for (const req of [requests[2]!, requests[12]!]) {
    const copy = () => structuredClone(req) as never;
    const expected = (await library.handleRequest(copy())) as Seen;
    expect(expected.kind).toMatch(/alias/);
    expect(await dispatch(ours.router.matchOperation(copy(), true)!, copy())).toEqual(expected);
  }
});

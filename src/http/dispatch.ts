// openapi-backend's handleRequest and validateRequest, for a request whose operation src/http/api.ts has already
// matched. The library's versions parse the request four times, match the operation a second time, and build the
// validated parameters through lodash (omitBy, find, entries, isEmpty): ~0.03 ms of CPU per request, about a
// tenth of what the server spends on a license validation beyond the bare route. These keep the library's
// semantics, step for step (security handlers, postSecurityHandler, 401, validation with coercion, 400, 501), for
// the handlers this API registers: it registers no preRoutingHandler, postRoutingHandler, preOperationHandler or
// postResponseHandler, and createDispatcher refuses to run if one appears. A request that matches no operation
// (404, 405) is still answered by the library's handleRequest.
import type OpenAPIBackend from 'openapi-backend';
import type { Context, Operation, ParsedRequest, Request as RoutedRequest } from 'openapi-backend';
import type { ErrorObject, ValidateFunction } from 'ajv';

type Handler = (context: Context, ...args: unknown[]) => unknown;

interface Internals {
  handlers: Record<string, Handler | undefined>;
  securityHandlers: Record<string, Handler | undefined>;
  validator: {
    coerceTypes: boolean;
    getRequestValidatorsForOperation(operationId: string): ValidateFunction[] | undefined;
  };
  router: {
    parseRequest(req: RoutedRequest, operation?: Operation): ParsedRequest;
    parseRequestQuery(req: RoutedRequest): Record<string, unknown>;
  };
  validate: boolean | ((context: Context, ...args: unknown[]) => boolean);
}

/** What validation needs of an operation, worked out on its first request instead of on every one. */
interface OperationShape {
  arrayQuery: Set<string>;
  jsonQuery: string[];
  onlyJsonBody: boolean;
}

function shapeOf(operation: Operation): OperationShape {
  const query = (operation.parameters ?? []).filter(
    (p): p is Extract<typeof p, { in: string }> => !('$ref' in p) && p?.in === 'query',
  );
  const payloads = Object.keys((operation.requestBody as { content?: object } | undefined)?.content ?? {});
  return {
    arrayQuery: new Set(
      query.filter((p) => (p.schema as { type?: unknown } | undefined)?.type === 'array').map((p) => p.name),
    ),
    jsonQuery: query.filter((p) => p.content?.['application/json']).map((p) => p.name),
    onlyJsonBody: payloads.length === 1 && payloads[0] === 'application/json',
  };
}

const unusedHooks = ['preRoutingHandler', 'postRoutingHandler', 'preOperationHandler', 'postResponseHandler'];

export function createDispatcher(backend: OpenAPIBackend) {
  const api = backend as unknown as Internals;
  const shapes = new WeakMap<Operation, OperationShape>();

  /** The library's validateRequest (openapi-backend 5.x validation.js), for a matched operation. */
  function validateRequest(req: RoutedRequest, operation: Operation) {
    let shape = shapes.get(operation);
    if (!shape) shapes.set(operation, (shape = shapeOf(operation)));
    const errors: ErrorObject[] = [];
    const coerced = { ...req };
    const validators = api.validator.getRequestValidatorsForOperation(operation.operationId!) ?? [];
    const { params, query, headers, cookies, requestBody } = api.router.parseRequest(req, operation);
    if (query) {
      for (const name of Object.keys(query)) {
        if (typeof query[name] === 'string' && shape.arrayQuery.has(name)) query[name] = [query[name]];
      }
    }
    const parameters: Record<string, unknown> = {};
    if (params != null) parameters.path = params;
    if (query != null) parameters.query = query;
    if (headers != null) parameters.header = headers;
    if (cookies != null) parameters.cookie = cookies;
    const parseError = (instancePath: string, schemaPath: string, err: unknown) => {
      if (err instanceof Error)
        errors.push({ keyword: 'parse', instancePath, schemaPath, params: [], message: err.message });
    };
    if (typeof req.body !== 'object' && req.body !== undefined && shape.onlyJsonBody) {
      try {
        JSON.parse(`${req.body}`);
      } catch (err) {
        parseError('', '#/requestBody', err);
      }
    }
    if (shape.jsonQuery.length) {
      const raw = api.router.parseRequestQuery(req);
      for (const name of shape.jsonQuery) {
        if (typeof raw[name] !== 'string') continue;
        try {
          JSON.parse(raw[name]);
        } catch (err) {
          parseError(`/query/${name}`, `#/parameters/${name}`, err);
        }
      }
    }
    const rawContentType = headers['content-type'];
    const contentType = String((Array.isArray(rawContentType) ? rawContentType[0] : rawContentType) || '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    if (typeof requestBody === 'object' || contentType === 'application/json') parameters.requestBody = requestBody;
    for (const validate of validators) {
      validate(parameters);
      if (validate.errors) errors.push(...validate.errors);
      else if (api.validator.coerceTypes) {
        coerced.query = parameters.query as RoutedRequest['query'];
        (coerced as { params?: unknown }).params = parameters.path;
      }
    }
    return { valid: errors.length === 0, coerced, errors: errors.length ? errors : null };
  }

  /** The library's handleRequest from the point where the operation is matched. */
  return async function dispatch(operation: Operation, req: RoutedRequest, ...args: unknown[]): Promise<unknown> {
    for (const hook of unusedHooks) {
      if (api.handlers[hook]) throw new Error(`dispatch does not run openapi-backend's ${hook}`);
    }
    const context = { api: backend, operation, request: api.router.parseRequest(req, operation) } as Context;
    const requirements = operation.security ?? [];
    const results: Record<string, unknown> = {};
    for (const requirement of requirements) {
      for (const name of Object.keys(requirement)) {
        if (name in results) continue;
        const securityHandler = api.securityHandlers[name];
        try {
          results[name] = securityHandler ? await securityHandler(context, ...args) : undefined;
        } catch (error) {
          // A rejection is a failed requirement; a falsy reason still carries an error.
          results[name] = { error: error || new Error('security handler rejected') };
        }
      }
    }
    const authorized = requirements.some((requirement) =>
      Object.keys(requirement).every((name) => {
        const result = results[name] as { error?: unknown } | undefined;
        return Boolean(result) && !(typeof result === 'object' && result.error);
      }),
    );
    context.security = { ...results, authorized };
    await api.handlers.postSecurityHandler?.(context, ...args);
    if (!authorized && requirements.length > 0) return needHandler('unauthorizedHandler')(context, ...args);
    if (typeof api.validate === 'function' ? api.validate(context, ...args) : api.validate) {
      context.validation = validateRequest(req, operation) as Context['validation'];
      if (context.validation.errors) return needHandler('400', 'validationFail')(context, ...args);
      if (api.validator.coerceTypes) {
        context.request = api.router.parseRequest(context.validation.coerced as RoutedRequest, operation);
      }
    }
    const handler = api.handlers[operation.operationId!] ?? needHandler('501', 'notImplemented');
    return handler(context, ...args);
  };

  /** The first registered of a handler's names, in the library's order (its status-code alias first). */
  function needHandler(...names: string[]): Handler {
    for (const name of names) {
      const handler = api.handlers[name];
      if (handler) return handler;
    }
    throw new Error(`openapi-backend has no ${names.join(' or ')} handler registered`);
  }
}

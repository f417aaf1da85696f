// The openapi-backend glue: the contract routes each request to its operationId and validates it; authentication
// and the scope check come from the operation's `security`; handlers run (writes inside one transaction) and their
// result is wrapped in the envelope. Every failure is thrown and mapped by src/http/errors.ts, because an error
// thrown inside openapi-backend skips its own post-response hook.
import type { Request, Response } from 'express';
import OpenAPIBackend, { OpenAPIRouter, OpenAPIValidator, type Context, type Document } from 'openapi-backend';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import { authenticate, type AuthContext } from '../auth/authenticate';
import { fullAccessScope, hasScope } from '../auth/scopes';
import {
  ApiError,
  ForbiddenError,
  InsufficientScopeError,
  UnauthorizedError,
  ValidationError,
  type CredentialProblem,
} from '../errors';
import { operations, type OperationId } from '../generated/operations';
import { acceptedEntry, isRecordedRefusal, requestOrigin } from '../platform/audit';
import { Idempotency, idempotencyKeyOf } from '../platform/idempotency';
import { Effects, type UnitOfWork, type WriteOrigin } from '../platform/unit-of-work';
import type { ReadDb } from '../../db/queries/shop-scope';
import { loadSpec } from '../spec';
import { bodyValue, readBody, type BodySchema } from './body';
import { createDispatcher } from './dispatch';
import { dereferenceInPlace } from './dereference';
import { speedUpParsing, speedUpRouter } from './fast-router';
import type { RateLimiter } from './rate-limit';
import {
  isSingleStatement,
  prepareStep,
  type HandlerMap,
  type OperationContext,
  type OperationResult,
  type Services,
} from './handler';
import { errorAnswer, toApiError } from './errors';
import { renderResult, sendOutcome, sendStored, setIdempotencyStatus } from './idempotency';
import { refuseRepeatedAuthorization, routingMethod, withHeadAllowed } from './request-edges';
import { validationDetails } from '../platform/validation-details';
import { askFactoryDirectly, lazyAjvFactory } from './validators';
import { clockAhead } from '../platform/clock';
import type { ReadRouting } from '../platform/read-routing';

/**
 * openapi-backend in quick mode. It never checks the document against the OpenAPI 3.0 meta-schema there (which rejects
 * valid 3.1; the spec is linted by redocly instead).
 */
class OpenAPI31Backend extends OpenAPIBackend {
  /**
   * openapi-backend's init in quick mode (5.21), with two of its steps replaced. The definition is dereferenced in
   * place (./dereference.ts): loadSpec hands this instance a fresh copy, which openapi-backend deep-copied again, and
   * it parsed the document in the background besides (json-schema-ref-parser walking all of it, never read in quick
   * mode): ~30 ms of every start together. And it registered every handler a second time once initialised, each
   * registration finding its operation by rebuilding the list of all operations (lodash over every path):
   * quadratic, ~40 ms of every start for ~90 handlers. Here they are registered once, after the same check (strict:
   * an unknown operationId throws).
   */
  override async init() {
    this.document = this.inputDocument as Document;
    this.definition = dereferenceInPlace(this.document);
    this.router = new OpenAPIRouter({
      definition: this.definition,
      apiRoot: this.apiRoot,
      ignoreTrailingSlashes: this.ignoreTrailingSlashes,
    });
    if (this.validate !== false)
      this.validator = new OpenAPIValidator({
        definition: this.definition,
        ajvOpts: this.ajvOpts,
        customizeAjv: this.customizeAjv,
        router: this.router,
        lazyCompileValidators: this.quick,
        coerceTypes: this.coerceTypes,
      });
    const known = new Set(this.router.getOperations().map((op) => op.operationId));
    for (const operationId of Object.keys(this.handlers))
      if (!known.has(operationId) && !this.allowedHandlers.includes(operationId))
        throw new Error(`Unknown operationId ${operationId}. Refusing to register handler`);
    this.initialized = true;
    for (const [name, handler] of Object.entries(this.securityHandlers ?? {}))
      if (handler) this.registerSecurityHandler(name, handler);
    return this;
  }
}

export interface ApiOptions {
  db: Kysely<Database>;
  /** What read operations query through: the same database, refusing writes (db/read-only.ts). */
  readDb: ReadDb;
  /** The write path every state-changing operation runs through. */
  unitOfWork: UnitOfWork;
  services: Services;
  handlers: HandlerMap;
  limiter: RateLimiter;
  /** Idempotency for state-changing operations (built with the app's clock); a default one when omitted. */
  idempotency?: Idempotency;
  /** Streaming replicas for read operations (DATABASE_READ_URL); without it every read uses `readDb`. */
  reads?: ReadRouting;
}

/** The request object handed to openapi-backend; its body is filled in once the caller is authenticated. */
interface RoutedRequest {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string | string[]>;
  body: unknown;
}

function readRaw(req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => readBody(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
}

const noBody = { field: 'body', message: 'this operation takes no request body' };

/** Reads and parses the body into the routed request, so openapi-backend validates one JSON value. */
async function readBodyInto(req: Request, res: Response, operation: Context['operation']): Promise<void> {
  const routed = res.locals.routedRequest as RoutedRequest;
  const media = (operation.requestBody as { content?: Record<string, { schema?: BodySchema }> } | undefined)?.content;
  let value: unknown;
  try {
    await readRaw(req, res);
    value = await bodyValue(req, media?.['application/json']?.schema, Object.keys(media ?? {}));
  } catch (err) {
    // A body sent to an operation that takes none is refused as such (422), however large and whatever its media
    // type: the reads declare neither 413 nor 415, so those answers would break their contract.
    const declared = (operation.responses ?? {}) as Record<string, unknown>;
    if (!operation.requestBody && err instanceof ApiError && !declared[String(err.status)]) {
      throw new ApiError('VALIDATION_ERROR', undefined, { details: [noBody], headers: err.headers });
    }
    throw err;
  }
  if (value !== undefined && !operation.requestBody && !(isPlainObject(value) && Object.keys(value).length === 0)) {
    throw new ValidationError([noBody]);
  }
  routed.body = value;
  routed.headers = { ...routed.headers, 'content-type': 'application/json' };
}

const writeMethods = new Set(['post', 'put', 'patch', 'delete']);

/** Writes whose response carries a secret shown once (the code in approveOAuthAuthorization's redirect_url). */
const responseHoldsSecret = new Set(['approveOAuthAuthorization']);

/** Both schemes carry the credential in the same Bearer header: whichever satisfied the requirement holds it. */
function authOf(c: Context): AuthContext | undefined {
  const results = c.security as Record<string, unknown> | undefined;
  const found = results?.bearerAuth ?? results?.oauth2;
  return found && typeof found === 'object' && 'credential' in found ? (found as AuthContext) : undefined;
}

export async function createApi(options: ApiOptions) {
  const { db, readDb, unitOfWork, services, handlers, limiter, reads } = options;
  const idempotency =
    options.idempotency ??
    new Idempotency(db, unitOfWork, {
      errorAnswer: errorAnswer(services.config.publicUrl),
      logger: services.logger,
      secrets: services.secrets,
    });
  const ajvFactory = lazyAjvFactory();
  const api = new OpenAPI31Backend({
    definition: loadSpec() as unknown as Document,
    apiRoot: '/dev/v1',
    // quick: no eager compile of response validators (responses are validated in tests, never in production);
    // request validators are built right after init and compiled on first use or, in the server, in the background.
    quick: true,
    strict: true,
    validate: true,
    coerceTypes: true,
    ajvOpts: { allErrors: true, strict: false, useDefaults: true },
    // One Ajv per option set, shared by all operations, compiling each validator on first use (src/http/validators.ts).
    customizeAjv: ajvFactory,
  });

  // An operation lists both schemes; one look-up per request serves both, and the 401 reads why it failed.
  const lookups = new WeakMap<Request, Promise<AuthContext | CredentialProblem>>();
  const lookUp = (req: Request) => {
    let p = lookups.get(req);
    if (!p) lookups.set(req, (p = authenticate(db, req.headers.authorization, services.clock.now())));
    return p;
  };
  const securityHandler = async (_c: Context, req: Request) => {
    const found = await lookUp(req);
    return typeof found === 'string' ? false : found;
  };
  const refusal = async (req: Request) => {
    const found = await lookUp(req);
    return new UnauthorizedError(undefined, typeof found === 'string' ? found : 'invalid_token');
  };
  api.registerSecurityHandler('bearerAuth', securityHandler);
  api.registerSecurityHandler('oauth2', securityHandler);

  api.register({
    notFound: () => {
      throw new ApiError('NOT_FOUND', 'No such route.');
    },
    methodNotAllowed: (c: Context) => {
      const allowed = ['get', 'post', 'put', 'patch', 'delete']
        .filter((method) => api.router.matchOperation({ ...c.request, method } as never))
        .map((m) => m.toUpperCase());
      throw new ApiError('METHOD_NOT_ALLOWED', undefined, { headers: { Allow: allowed.join(', ') } });
    },
    unauthorizedHandler: async (_c: Context, req: Request) => {
      throw await refusal(req);
    },
    // Runs after authentication and before request validation, in this order: rate limit (so even refused
    // requests count), suspended shop, scope (a caller without the right learns nothing about the schema),
    // and only then the body is read, so an unauthenticated caller cannot make the server buffer bodies.
    postSecurityHandler: async (c: Context, req: Request, res: Response) => {
      const auth = authOf(c);
      if (auth) {
        res.locals.credentialId = auth.credential.id;
        await limiter.shop(req, res, auth.shop.id, auth.shop.plan);
        // Past authentication and the rate limit: from here on a write is recorded, whatever its answer.
        originFor(c, req, res, auth);
        if (auth.shop.status !== 'active') throw new ForbiddenError('This shop is suspended.');
        // Fails closed: an operation missing from the generated table needs a scope nobody holds.
        const needed = scopesNeeded(c.operation.operationId);
        if (!hasScope(auth.credential.scopes, needed)) throw new InsufficientScopeError(needed);
      } else {
        // A look-up that failed (database unreachable) is not a bad credential: surface it (503), not 401.
        const failed = (c.security as Record<string, { error?: unknown } | undefined> | undefined)?.bearerAuth?.error;
        if (failed) throw failed;
        await limiter.anonymous(req, res);
        if ((c.operation.security ?? []).length > 0) return; // openapi-backend answers 401 next
        originFor(c, req, res, undefined);
      }
      await readBodyInto(req, res, c.operation);
    },
    validationFail: (c: Context) => {
      throw new ValidationError(validationDetails(c.validation.errors ?? []));
    },
    notImplemented: () => {
      throw new ApiError('NOT_IMPLEMENTED');
    },
  });

  for (const [operationId, handler] of Object.entries(handlers)) {
    api.register(operationId, async (c: Context, req: Request, res: Response) => {
      const auth = authOf(c);
      // Only the OAuth endpoints are public (`security: []`); they authenticate clients themselves.
      const isPublic = (c.operation.security ?? []).length === 0;
      if (!auth && !isPublic) throw await refusal(req);
      const method = c.operation.method.toLowerCase();
      // Built once per request; a write swaps in its transaction and effects.
      const ctx = {
        operationId: operationId as OperationId,
        params: c.request.params as never,
        query: c.request.query as never,
        body: c.request.requestBody as never,
        headers: req.headers,
        auth: auth as AuthContext,
        // A test shop whose test clock was advanced reads its own time in every rule; everyone else real time.
        services: auth?.shop.clockOffsetMs
          ? { ...services, clock: clockAhead(services.clock, auth.shop.clockOffsetMs) }
          : services,
        requestId: res.locals.requestId as string,
        db: readDb,
        effects: undefined,
        write: undefined,
      } as unknown as OperationContext;
      // A write's context: its transaction and effects, for the caller's shop (a public OAuth write acts for none).
      const writing = (trx: Transaction<Database>, effects: Effects) => ({
        db: trx,
        effects,
        write: auth ? unitOfWork.shopWrite(trx, auth.shop.id, effects, ctx.services.clock) : undefined,
      });
      const run = handler as (ctx: OperationContext) => Promise<OperationResult>;
      const prepare = prepareStep(handler);
      if (!writeMethods.has(method)) {
        // With replicas: a replica for this shop if one is current enough, else (or if it fails the read) the primary.
        const result = reads
          ? await reads.read(auth?.shop.id, (readFrom) => run(Object.assign(ctx, { db: readFrom })), failsAs5xx)
          : await run(ctx);
        send(res, result);
        return;
      }
      if (isSingleStatement(handler) && idempotencyKeyOf(req.headers) === undefined) {
        // A write that is one statement, atomic by itself (validateLicense): no transaction around it, and that
        // statement writes the request's audit entry too, so the common case is one round trip. A refusal is
        // recorded by handle() below like any other. With an Idempotency-Key it takes the unit of work like every
        // write (the key's record must commit with the change).
        const origin = originFor(c, req, res, auth)!;
        origin.status = 200;
        const effects = new Effects();
        const result = await run(
          Object.assign(ctx, writing(db as unknown as Transaction<Database>, effects), {
            inlineAudit: acceptedEntry(origin, 200),
          }),
        );
        if (Object.values(effects.pending).some((list: unknown[]) => list.length > 0))
          throw new Error(`${operationId} runs as a single statement but queued side effects`);
        if (auth) await reads?.noteWrite(auth.shop.id);
        send(res, result);
        return;
      }
      // Writes: the unit of work, with the idempotency record committed in it (src/platform/idempotency.ts).
      // A refusal is recorded once, by handle() below, with every other refusal of the request.
      const origin = originFor(c, req, res, auth)!; // a write: it has one
      // The events and mail of a test shop whose clock runs ahead are stamped (and fall due) on its clock.
      if (ctx.services.clock !== services.clock) origin.clock = ctx.services.clock;
      const outcome = await idempotency.execute(
        {
          headers: req.headers,
          // Public (OAuth) writes: a transaction, no replay scope. Nor for an approval: its response is a single-use
          // code, which a replay would hand out again after it was redeemed, so its Idempotency-Key is bypassed.
          credentialId: responseHoldsSecret.has(operationId) ? undefined : auth?.credential.id,
          operationId,
          method,
          path: req.originalUrl.split('?')[0]!,
          query: c.request.query,
          body: c.operation.requestBody ? c.request.requestBody : undefined,
        },
        origin,
        async (trx, effects) => {
          const result = await run(Object.assign(ctx, writing(trx, effects)));
          // The status the response has (renderResult's), known to the sinks before commit: the audit line's.
          origin.status = result.status ?? 200;
          return renderResult(result);
        },
        prepare &&
          (async () => {
            // Outside any transaction, before it: reads through the read-only pool, like a read operation, and
            // the primary for what must not lag or must be held while a provider is asked.
            Object.assign(ctx, { prepared: await prepare({ ...ctx, primary: db } as never) });
          }),
      );
      // Before the answer leaves: the client's next read must find the replicas told where this write is.
      if (auth && !('error' in outcome)) await reads?.noteWrite(auth.shop.id);
      sendOutcome(res, outcome);
    });
  }

  await api.init();
  askFactoryDirectly(api.validator, ajvFactory);
  speedUpRouter(api.router);
  speedUpParsing(api.router);
  (api.validator as unknown as { preCompileRequestValidators(): void }).preCompileRequestValidators();
  const dispatch = createDispatcher(api);

  return async function handle(req: Request, res: Response): Promise<void> {
    const routed: RoutedRequest = {
      method: routingMethod(req.method),
      path: req.originalUrl.split('?')[0]!,
      query: req.query as Record<string, string | string[]>,
      headers: req.headers as Record<string, string | string[]>,
      body: undefined,
    };
    res.locals.routedRequest = routed;
    try {
      decodeURIComponent(routed.path);
    } catch {
      // A malformed %-escape names no resource this API has (openapi-backend would throw a URIError: a 500).
      throw new ApiError('NOT_FOUND', 'No such route: the path is not validly percent-encoded.');
    }
    const operation = api.router.matchOperation(routed as never);
    if (operation) {
      res.locals.operationId = operation.operationId;
      res.locals.route = `${operation.method.toUpperCase()} /dev/v1${operation.path}`;
      // Every response of a state-changing operation says what idempotency did; `bypassed` until it does something.
      if (writeMethods.has(operation.method.toLowerCase())) setIdempotencyStatus(res, 'bypassed');
      if ((operation.security ?? []).length > 0) refuseRepeatedAuthorization(req.rawHeaders);
    }
    try {
      // A matched operation goes straight to its dispatch; 404 and 405 are the library's.
      if (operation) await dispatch(operation, routed as never, req, res);
      else await api.handleRequest(routed as never, req, res);
    } catch (err) {
      // The one place a write's refusal is recorded (its audit line, in a transaction of its own): schema
      // validation, scope, suspended shop, body errors, idempotency and business rules alike. A request refused
      // before its caller was known (401), or by the rate limit (429), has no origin or is not recorded.
      const origin = res.locals.writeOrigin as WriteOrigin | undefined;
      const refusal = origin && toApiError(err);
      if (origin && refusal && isRecordedRefusal(refusal)) await unitOfWork.recordRejection(origin, refusal);
      // A refused write may have left its audit line (and a stored refusal): reads of the shop see it as well.
      if (origin?.shopId) await reads?.noteWrite(origin.shopId);
      throw withHeadAllowed(err);
    }
  };
}

/**
 * The origin of a state-changing request (who, and what the audit trail records of the request), built once, as
 * soon as the caller is known, and kept in res.locals; reads have none.
 */
function originFor(c: Context, req: Request, res: Response, auth: AuthContext | undefined): WriteOrigin | undefined {
  if (!writeMethods.has(c.operation.method.toLowerCase())) return undefined;
  return (res.locals.writeOrigin ??= requestOrigin({
    request: {
      method: req.method,
      path: req.originalUrl.split('?')[0]!,
      ip: req.ip,
      userAgent: req.headers['user-agent'],
    },
    operationId: c.operation.operationId!,
    requestId: res.locals.requestId as string,
    caller: auth && { shopId: auth.shop.id, credentialId: auth.credential.id, credentialKind: auth.credential.kind },
    pathParams: c.request.params as Record<string, unknown>,
  })) as WriteOrigin;
}

/** The scopes an operation needs, all of them; an operation the generated table does not know needs `*`. */
export function scopesNeeded(operationId: string | undefined): readonly string[] {
  const entry =
    operationId && Object.hasOwn(operations, operationId) ? operations[operationId as OperationId] : undefined;
  return entry ? entry.scopes : [fullAccessScope];
}

/** A read that failed on a replica is run again on the primary when its answer would be a 5xx, never a 4xx. */
function failsAs5xx(err: unknown): boolean {
  return (toApiError(err)?.status ?? 500) >= 500;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function send(res: Response, result: OperationResult): void {
  if ('html' in result) {
    res.status(result.status ?? 200);
    if (result.headers) res.set(result.headers);
    res.type('html').send(result.html);
    return;
  }
  // One renderer for every response, so an idempotent replay is byte-identical to what a first request gets.
  sendStored(res, renderResult(result));
}

// The walk generated from the contract: every operation with a path parameter, and every reference to another row
// in a request body, called by one tenant with another tenant's ids. test/platform/tenancy.test.ts walks it between
// two shops, test/platform/cross-mode.test.ts between a live shop and its test twin (issue 26): the same routes,
// the same bodies, the same rule (404, indistinguishable from an id that exists nowhere, nothing changed).
import { handlers, notImplemented } from '../../handlers';
import { operations } from '../../src/generated/operations';
import { loadSpec } from '../../src/spec';
import { bearer, type TestApp } from './test-app';
import { contractParameterKinds, isResourceKind, type ResourceKind, type TenantShop } from './two-shops';

const spec = loadSpec();

/** Where an operation needs a particular resource of a kind (claims need a SERIALS product without variants). */
const operationKinds: Readonly<Record<string, Readonly<Record<string, ResourceKind>>>> = {
  claimProductSerials: { id: 'serialProduct' },
  completeOrder: { id: 'pendingOrder' },
  fulfillOrder: { id: 'fulfillableOrder' },
  // Only an affiliate has commission to convert.
  convertCustomerAffiliateBalance: { id: 'affiliate' },
};

/**
 * Bodies for operations whose contract example names resources the shops do not hold (an attachment), or values
 * that would fail before the walked reference is looked at (a coupon code, a date in the past). The body-reference
 * walk then puts the caller's own ids at every reference of these bodies, and the other tenant's at one.
 */
const operationBodies: Readonly<Record<string, unknown>> = {
  fulfillOrderItem: { message: 'Delivered by the tenancy walk', notify_customer: false },
  // Within the affiliate's unpaid commission (7.25 imported with the fixture).
  convertCustomerAffiliateBalance: { amount: 1 },
};

/** Bodies used only by the body-reference walk (the path walk keeps the contract's example). */
const referenceBodies: Readonly<Record<string, unknown>> = {
  createOrder: { email: 'ada@example.com', items: [{ product_id: '', variant_id: '', quantity: 1 }] },
  createPaymentLink: { title: 'Walk link', product_id: '', variant_id: '', quantity: 1 },
  createLicense: { product_id: '', key: 'WALK-LICENSE-0001', customer_email: 'ada@example.com' },
  validateLicense: { key: 'TENANCY-LICENSE-0001', product_id: '', hwid: 'HW-TENANCY' },
  inviteReseller: { email: 'bob@example.com', tier_id: '' },
  updateResellerProgram: { default_tier_id: '' },
  updateQuantityDeal: { product_ids: [''] },
  fulfillOrderItem: { notify_customer: false, files: [{ attachment_id: '' }] },
};

/** The resource kind of each id-like property of request bodies (`x_id`, `x_ids`), by property name. */
const bodyPropertyKinds: Readonly<Record<string, ResourceKind>> = {
  product_id: 'product',
  product_ids: 'product',
  variant_id: 'variant',
  tier_id: 'resellerTier',
  default_tier_id: 'resellerTier',
  attachment_id: 'attachment',
};

/** Where an operation's body needs a particular resource of a kind (a license is validated against its product). */
const bodyOperationKinds: Readonly<Record<string, Readonly<Record<string, ResourceKind>>>> = {
  validateLicense: { product_id: 'licenseProduct' },
};

/** Id-like body properties that name no row of a shop, with the reason: the walk leaves them out, and says so. */
export const bodyPropertiesNotShopRows: Readonly<Record<string, string>> = {
  client_id: "an OAuth app's client id: apps are the platform's, registered once for every shop and mode",
  user_ids: "Telegram user ids: the messenger's own numbers, not rows of this API",
};

/**
 * Resource kinds the shops do not hold yet: a syntactically valid id of the right shape stands in. When an issue
 * builds one of these, it seeds the kind in test/helpers/two-shops.ts and removes its line here; an implemented
 * operation walked with a placeholder makes the walks fail.
 */
const placeholderIds: Readonly<Record<string, string>> = {};

export type OperationId = keyof typeof operations;

export interface PathParam {
  name: string;
  /** components/parameters name, or `inline` */
  ref: string;
  kind: string | undefined;
}

export interface Route {
  operationId: OperationId;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  params: PathParam[];
  implemented: boolean;
  example: unknown;
  query: Record<string, string>;
}

function resolveParam(p: any): { def: any; ref: string } {
  if (typeof p?.$ref === 'string') {
    const ref = p.$ref.split('/').pop() as string;
    return { def: spec.components.parameters[ref], ref };
  }
  return { def: p, ref: 'inline' };
}

function routeOf(operationId: OperationId): Route {
  const { method, path } = operations[operationId] as { method: Route['method']; path: string };
  const op = spec.paths[path]?.[method];
  const declared = [...(spec.paths[path]?.parameters ?? []), ...(op?.parameters ?? [])].map(resolveParam);
  const params = [...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => {
    const found = declared.find((d) => d.def?.in === 'path' && d.def?.name === name);
    const ref = found?.ref ?? 'inline';
    return { name: name!, ref, kind: operationKinds[operationId]?.[name!] ?? contractParameterKinds[ref] };
  });
  const query: Record<string, string> = {};
  for (const { def } of declared) {
    if (def?.in !== 'query' || !def.required) continue;
    const value = def.example ?? def.schema?.example ?? def.schema?.enum?.[0];
    if (value === undefined) throw new Error(`${operationId}: give the required query parameter ${def.name} a value`);
    query[def.name] = String(value);
  }
  return {
    operationId,
    method,
    path,
    params,
    implemented: (handlers as Record<string, unknown>)[operationId] !== notImplemented,
    example: operationBodies[operationId] ?? op?.requestBody?.content?.['application/json']?.example,
    query,
  };
}

/** Every operation of the contract whose path has a parameter, with what the walk needs to call it. */
export const routes: Route[] = (Object.keys(operations) as OperationId[])
  .filter((id) => operations[id].path.includes('{'))
  .sort()
  .map(routeOf);
export const implementedRoutes = routes.filter((r) => r.implemented);

// ---------------------------------------------------------------------------------------------------------------
// References in request bodies
// ---------------------------------------------------------------------------------------------------------------

/** One id-like property of a request body: where it sits (array items at index 0) and the kind it names. */
export interface BodyReference {
  route: Route;
  /** Property names and array indexes from the body's root to the property. */
  at: (string | number)[];
  /** `x_ids`: an array of ids (the walked one is its only element). */
  many: boolean;
  property: string;
  /** The kind it names, or undefined for a property of `bodyPropertiesNotShopRows` (or one not mapped yet). */
  kind: ResourceKind | undefined;
}

function deref(schema: any): any {
  let s = schema;
  for (let i = 0; s?.$ref && i < 20; i++) {
    s = (s.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: any, k: string) => o?.[k], spec as any);
  }
  return s;
}

/** Every id-like property (`…_id`, `…_ids`) of a schema, nested objects and array items included. */
function idProperties(
  schema: any,
  at: (string | number)[],
  seen: Set<unknown>,
): { at: (string | number)[]; many: boolean }[] {
  const s = deref(schema);
  if (!s || typeof s !== 'object' || seen.has(s)) return [];
  const inner = new Set(seen).add(s);
  const found: { at: (string | number)[]; many: boolean }[] = [];
  for (const k of ['allOf', 'oneOf', 'anyOf']) for (const x of s[k] ?? []) found.push(...idProperties(x, at, inner));
  for (const [name, value] of Object.entries<any>(s.properties ?? {})) {
    if (/_ids?$/.test(name)) found.push({ at: [...at, name], many: name.endsWith('_ids') });
    found.push(...idProperties(value, [...at, name], inner));
  }
  if (s.items) found.push(...idProperties(s.items, [...at, 0], inner));
  const unique = new Map(found.map((f) => [f.at.join('.'), f]));
  return [...unique.values()];
}

/** Every id-like property of every request body of the contract (implemented or not). */
export const bodyReferences: BodyReference[] = (Object.keys(operations) as OperationId[])
  .sort()
  .flatMap((operationId) => {
    const { method, path } = operations[operationId] as { method: Route['method']; path: string };
    const schema = spec.paths[path]?.[method]?.requestBody?.content?.['application/json']?.schema;
    if (!schema) return [];
    const route = routeOf(operationId);
    return idProperties(schema, [], new Set()).map(({ at, many }) => {
      const property = String(at[at.length - 1]);
      return {
        route,
        at,
        many,
        property,
        kind: bodyOperationKinds[operationId]?.[property] ?? bodyPropertyKinds[property],
      };
    });
  });

/** The references the walk calls: the ones naming a shop's row, of implemented operations. */
export const walkedBodyReferences = bodyReferences.filter(
  (r) => r.route.implemented && bodyPropertiesNotShopRows[r.property] === undefined,
);

function setAt(body: any, at: (string | number)[], value: unknown): void {
  let node = body;
  for (const key of at.slice(0, -1)) node = node[key];
  node[at[at.length - 1]!] = value;
}

/**
 * The body of a reference's operation with the caller's own ids at every reference, then `id` at the walked one.
 * `id` undefined: the caller's own id there too.
 */
export function bodyFor(ref: BodyReference, caller: TenantShop, id?: string): unknown {
  const base = referenceBodies[ref.route.operationId] ?? ref.route.example;
  if (base === undefined)
    throw new Error(`${ref.route.operationId}: give the body-reference walk a body (referenceBodies)`);
  const body = structuredClone(base) as any;
  for (const other of walkedBodyReferences.filter((r) => r.route === ref.route)) {
    try {
      const own = caller.ids[other.kind!];
      setAt(body, other.at, other.many ? [own] : own);
    } catch {
      // The base body leaves this optional reference out.
    }
  }
  const value = id ?? caller.ids[ref.kind!];
  setAt(body, ref.at, ref.many ? [value] : value);
  return body;
}

// ---------------------------------------------------------------------------------------------------------------
// Ids and calls
// ---------------------------------------------------------------------------------------------------------------

/** The id a shop uses for a parameter: its own fixture id of that kind, or the kind's placeholder. */
function idFor(shop: TenantShop, kind: string | undefined): { id: string; real: boolean } {
  if (kind !== undefined && isResourceKind(kind)) return { id: shop.ids[kind], real: true };
  if (kind !== undefined && placeholderIds[kind] !== undefined) return { id: placeholderIds[kind], real: false };
  throw new Error(`no resource kind for this parameter: map it in contractParameterKinds of test/helpers/two-shops.ts`);
}

/** An id of the same shape that exists in no shop. */
export function missingIdLike(id: string): string {
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-/.test(id)) return '00000000-0000-4000-8000-000000000000';
  const prefix = id.includes('_') ? id.slice(0, id.indexOf('_') + 1) : '';
  return `${prefix}${'0'.repeat(Math.max(1, id.length - prefix.length))}`;
}

export function urlOf(route: Route, ids: Record<string, string>): string {
  const filled = route.path.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeURIComponent(ids[name]!));
  const qs = new URLSearchParams(route.query).toString();
  return `/dev/v1${filled}${qs ? `?${qs}` : ''}`;
}

/** The parameters of a route filled with `owner`'s ids (fixture ids, or placeholders for kinds not seeded yet). */
export function idsOf(route: Route, owner: TenantShop): { ids: Record<string, string>; placeholders: string[] } {
  const ids: Record<string, string> = {};
  const placeholders: string[] = [];
  for (const p of route.params) {
    const { id, real } = idFor(owner, p.kind);
    ids[p.name] = id;
    if (!real) placeholders.push(`{${p.name}} (${p.kind})`);
  }
  return { ids, placeholders };
}

/** One row of the walk's listing: what it calls and with which kinds. */
export function describeRoute(r: Route): string {
  const kinds = r.params.map((p) => `${p.name}=${p.kind}${isResourceKind(p.kind!) ? '' : ' (placeholder)'}`);
  return `${r.implemented ? 'implemented    ' : '501 (not built)'}  ${r.operationId.padEnd(32)} ${r.method.toUpperCase().padEnd(6)} ${r.path}  [${kinds.join(', ')}]`;
}

export function describeReference(r: BodyReference): string {
  return `${r.route.operationId.padEnd(32)} ${r.route.method.toUpperCase().padEnd(6)} ${r.route.path}  body.${r.at.join('.')} = ${r.kind}`;
}

type Answer = { status: number; body: any };

/** What a walk needs of the app: calls with a caller's key, and the probes that expect the other tenant's 404. */
export function createWalker(t: TestApp, name: string) {
  let requestCounter = 0;
  /** `${caller.label} ${operationId}` of every route walked, and `… body.<path>` of every reference. */
  const walked = new Set<string>();

  async function call(route: Route, caller: TenantShop, ids: Record<string, string>, body = route.example) {
    let req = t.http[route.method](urlOf(route, ids)).set(bearer(caller.key));
    if (route.method !== 'get') req = req.set('Idempotency-Key', `${name}-${caller.label}-${++requestCounter}`);
    if (body !== undefined) req = req.send(body as object);
    return req;
  }

  /**
   * Same status, error code and message: nothing tells the caller whether the row exists elsewhere. A message may
   * name the id it was given (`product prod_… does not exist`): each answer's own id is read as `<id>`.
   */
  function expectSameAnswer(said: string, res: Answer, none: Answer, sent: string[] = [], missing: string[] = []) {
    const message = (a: Answer, ids: string[]) =>
      ids.reduce((m: unknown, id) => (typeof m === 'string' ? m.split(id).join('<id>') : m), a.body?.error?.message);
    expect({ said, answer: [res.status, res.body?.error?.code, message(res, sent)] }).toEqual({
      said,
      answer: [none.status, none.body?.error?.code, message(none, missing)],
    });
  }

  /** `route` called by `caller` with `owner`'s ids: 404 (or 501 while not built), as an id that exists nowhere. */
  async function walkRoute(route: Route, caller: TenantShop, owner: TenantShop) {
    const { ids, placeholders } = idsOf(route, owner);
    const res = await call(route, caller, ids);
    walked.add(`${caller.label} ${route.operationId}`);
    const said = `${route.operationId} by ${caller.label} with ${owner.label}'s ids answered ${res.status} ${JSON.stringify(res.body?.error ?? res.body)}`;
    // Never a success (another tenant's row was reached) nor a 403 (the caller has every scope: it must be 'not found').
    expect({ said, refused: ![200, 201, 202, 204, 403].includes(res.status) }).toEqual({ said, refused: true });
    if (route.implemented) {
      if (placeholders.length > 0) {
        throw new Error(
          `${route.operationId} is implemented but is walked with a placeholder for ${placeholders.join(', ')}: add its resource to test/helpers/two-shops.ts`,
        );
      }
      expect({ said, status: res.status }).toEqual({ said, status: 404 });
      expect(res.body.error.code).toMatch(/^([A-Z_]+_)?NOT_FOUND$/);
      // Indistinguishable from an id that exists nowhere: nothing tells the caller that the other tenant has this row.
      const missing = Object.fromEntries(Object.entries(ids).map(([k, v]) => [k, missingIdLike(v)]));
      const none = await call(route, caller, missing);
      expectSameAnswer(said, res, none, Object.values(ids), Object.values(missing));
    } else {
      expect({ said, status: res.status }).toEqual({ said, status: 501 });
      expect(res.body.error.code).toBe('NOT_IMPLEMENTED');
    }
  }

  /**
   * `ref`'s operation called by `caller` with its own ids everywhere (path and body) but `owner`'s id at `ref`:
   * never a success, and the very answer of an id that exists nowhere at that place.
   */
  async function walkBodyReference(ref: BodyReference, caller: TenantShop, owner: TenantShop) {
    const { ids } = idsOf(ref.route, caller);
    const foreign = owner.ids[ref.kind!];
    const res = await call(ref.route, caller, ids, bodyFor(ref, caller, foreign));
    walked.add(`${caller.label} ${ref.route.operationId} body.${ref.at.join('.')}`);
    const said = `${ref.route.operationId} by ${caller.label} with ${owner.label}'s ${ref.kind} at body.${ref.at.join('.')} answered ${res.status} ${JSON.stringify(res.body?.error ?? res.body)}`;
    expect({ said, refused: res.status >= 400 && res.status !== 403 }).toEqual({ said, refused: true });
    const none = await call(ref.route, caller, ids, bodyFor(ref, caller, missingIdLike(foreign)));
    expectSameAnswer(said, res, none, [foreign], [missingIdLike(foreign)]);
    return res as Answer;
  }

  /** The same call with the caller's own id at `ref`: answers otherwise than an id that exists nowhere (not vacuous). */
  async function ownBodyReference(ref: BodyReference, caller: TenantShop) {
    const { ids } = idsOf(ref.route, caller);
    const own = await call(ref.route, caller, ids, bodyFor(ref, caller));
    const none = await call(ref.route, caller, ids, bodyFor(ref, caller, missingIdLike(caller.ids[ref.kind!])));
    return { own: own as Answer, none: none as Answer };
  }

  return { call, idsOf, walked, walkRoute, walkBodyReference, ownBodyReference };
}

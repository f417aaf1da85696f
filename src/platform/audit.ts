// The audit trail (DESIGN "Audit trail", issue 9): every state-changing request under /dev/v1 that got past
// authentication writes exactly one entry, whether it was accepted, refused by a business rule or rejected by
// validation: who (credential id and kind), what (operationId, an action, the resource its path names), how it
// ended (HTTP status, error code) and from where (IP, user agent, request id). The platform writes it, never a
// handler. An entry holds what a request was about (method, path, path parameters), never what it said: no body,
// no query, no header but the user agent, so neither a credential nor a value the caller sent can end up in it.
//
// How each request reaches the trail:
//   - accepted: auditSink() writes the entry inside the write's transaction, with the status the response has
//     (src/http/api.ts sets it on the origin before commit): it commits with the change or not at all;
//   - refused with a 4xx (schema validation, scope, a suspended shop, the body reader's 413/415, idempotency, a
//     business rule): the change is rolled back, src/http/api.ts calls UnitOfWork.recordRejection once for the
//     request, and the entry is written in a transaction of its own, so it survives the rollback;
//   - an idempotent replay (Idempotency-Status: cached) is a request too: one entry with the replayed status,
//     written by an empty unit of work before the replay is sent (src/platform/idempotency.ts). So: one entry per
//     request, whatever it did;
//   - not recorded: 401 (not past authentication), 429 (a flood would write a row per request: the limit is what
//     keeps the trail's growth bounded), 5xx (the server failed; the request was not decided), reads, and the
//     public operations (OAuth token exchange: no shop, no credential to record).
import { auditEntryInsert, insertAuditEntry, type NewAuditEntry } from '../../db/queries/audit-entries';
import type { ApiError } from '../errors';
import { operations } from '../generated/operations';
import { newId } from '../ids';
import { loadSpec, type SpecDocument } from '../spec';
import type { AuditDraft, EffectSink, PendingEffects, WriteOrigin, WriteRequestFacts } from './unit-of-work';

/** What the trail says of an operation, worked out once from the contract. */
export interface AuditedOperation {
  /** `<first path segment>.<verb>`, e.g. `orders.refund` (refundOrder), `webhooks.rotate_secret`. */
  action: string;
  /** The kind of resource the path names (`product` for /products/{id}), or the collection's (`order` for /orders). */
  resourceType: string;
  /** The path parameter holding the resource's id (the path's first one), if any. */
  resourceParam: string | undefined;
}

/** Statuses of refusals that are not recorded: not past authentication (401), rate limited (429). */
const unrecordedRefusals = new Set([401, 429]);

/** Whether a refusal is recorded (UnitOfWork.recordRejection): every 4xx but 401 and 429. */
export function isRecordedRefusal(error: ApiError): boolean {
  return error.status >= 400 && error.status < 500 && !unrecordedRefusals.has(error.status);
}

/** Who made a request: a credential of a shop, as authentication found it (the http layer says so). */
export interface RequestCaller {
  shopId: string;
  credentialId: string;
  credentialKind: NonNullable<WriteRequestFacts['credentialKind']>;
}

/** What the trail may keep of a request, read off it by the http layer: never its body, query or credential. */
export interface RequestDescription {
  /** As received (`post`, `POST`); stored upper case. */
  method: string;
  /** The request path, without the query. */
  path: string;
  /** The client's address (express's `req.ip`: honours `trust proxy`). */
  ip: string | undefined;
  userAgent: string | undefined;
}

/**
 * The origin of a write made by an API request: who, and the request's facts the trail records. Built once per
 * request, as soon as the caller is authenticated (src/http/api.ts); the status is set when the answer is known.
 */
export function requestOrigin(input: {
  request: RequestDescription;
  operationId: string;
  requestId: string;
  caller: RequestCaller | undefined;
  pathParams: Record<string, unknown> | undefined;
}): WriteOrigin {
  const { request, caller } = input;
  const pathParams: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.pathParams ?? {})) {
    if (value !== undefined && value !== null) pathParams[name] = storable(String(value), MAX_PARAM);
  }
  return {
    shopId: caller?.shopId,
    credentialId: caller?.credentialId,
    operationId: input.operationId,
    requestId: input.requestId,
    request: {
      method: request.method.toUpperCase(),
      path: storable(request.path, MAX_PATH),
      pathParams,
      ip: request.ip === undefined ? undefined : storable(request.ip, MAX_PARAM),
      userAgent: request.userAgent === undefined ? undefined : storable(request.userAgent, MAX_USER_AGENT),
      credentialKind: caller?.credentialKind,
    },
  };
}

/**
 * The sink that writes the audit trail: one entry per request, in the write's transaction (accepted) or in one of
 * its own (refused). Takes the `audit` effects too: a handler may name the resource a create made
 * (`effects.audit({ action, resourceType, resourceId })`), which the entry uses when its path names none; a
 * draft's `detail` is never stored (it could carry what the request said). Handlers need not call anything.
 */
export function auditSink(): EffectSink {
  const factsOf = (operationId: string): AuditedOperation =>
    auditedTable().get(operationId) ?? { action: operationId, resourceType: 'unknown', resourceParam: undefined };
  return {
    kinds: ['audit'],
    write(trx, pending: PendingEffects, origin, batch) {
      if (!isAudited(origin)) return;
      if (origin.status === undefined) {
        throw new Error(`the audited write ${origin.operationId} was not told its response status before commit`);
      }
      const row = entryRow(origin, factsOf(origin.operationId), origin.status, null, pending.audit[0]);
      // In the flush's statement, with the write's events and mail.
      batch.add({ steps: [{ name: 'new_audit_entry', query: auditEntryInsert(origin.shopId, row) }] });
    },
    async rejected(trx, origin, error) {
      if (!isAudited(origin) || !isRecordedRefusal(error)) return;
      const row = entryRow(origin, factsOf(origin.operationId), error.status, error.code, undefined);
      await insertAuditEntry(trx, origin.shopId, row);
    },
  };
}

type AuditedOrigin = WriteOrigin & {
  shopId: string;
  credentialId: string;
  request: NonNullable<WriteOrigin['request']> & { credentialKind: string };
};

/** Only a request made with a credential of a shop has an entry (workers' writes and public operations do not). */
function isAudited(origin: WriteOrigin): origin is AuditedOrigin {
  return (
    origin.shopId !== undefined &&
    origin.credentialId !== undefined &&
    origin.request !== undefined &&
    origin.request.credentialKind !== undefined
  );
}

let sharedTable: Map<string, AuditedOperation> | undefined;

/**
 * The contract's audited operations, built once per process and only when an entry is first written: parsing the
 * contract costs milliseconds, and a worker builds the sinks for every write it makes (src/domain/effects.ts), none
 * of them audited.
 */
function auditedTable(): Map<string, AuditedOperation> {
  return (sharedTable ??= auditedOperations(loadSpec()));
}

/**
 * The entry of an accepted request, for a write that records it itself: a single-statement write run outside the
 * unit of work (src/http/api.ts) writes it in its one statement. Undefined when the request is not audited.
 */
export function acceptedEntry(origin: WriteOrigin, status: number): NewAuditEntry | undefined {
  if (!isAudited(origin)) return undefined;
  const facts = auditedTable().get(origin.operationId) ?? {
    action: origin.operationId,
    resourceType: 'unknown',
    resourceParam: undefined,
  };
  return entryRow(origin, facts, status, null, undefined);
}

function entryRow(
  origin: AuditedOrigin,
  facts: AuditedOperation,
  status: number,
  errorCode: string | null,
  draft: AuditDraft | undefined,
): NewAuditEntry {
  const { request } = origin;
  const fromPath = facts.resourceParam === undefined ? undefined : request.pathParams[facts.resourceParam];
  const row: NewAuditEntry = {
    id: newId('aud'),
    credential_id: origin.credentialId,
    credential_kind: request.credentialKind,
    operation_id: origin.operationId,
    method: request.method,
    path: request.path,
    action: facts.action,
    resource_type: fromPath === undefined && draft ? storable(draft.resourceType, MAX_PARAM) : facts.resourceType,
    resource_id: fromPath ?? (draft ? storable(draft.resourceId, MAX_PARAM) : null),
    path_params: JSON.stringify(request.pathParams),
    status,
    error_code: errorCode,
    ip: request.ip ?? null,
    user_agent: request.userAgent ?? null,
    request_id: origin.requestId,
  };
  return row;
}

// ---------------------------------------------------------------------------------------------------------------
// Text as stored: bounded, and without what PostgreSQL text or jsonb cannot hold (U+0000, unpaired surrogates).
// A path parameter refused by validation (a 422 is recorded too) can be anything the client sent.
// ---------------------------------------------------------------------------------------------------------------

const MAX_PATH = 2048;
const MAX_PARAM = 256;
const MAX_USER_AGENT = 512;

// eslint-disable-next-line no-control-regex -- U+0000 is exactly what must go
const unstorable = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function storable(text: string, max: number): string {
  let clean = text.replace(unstorable, '\uFFFD');
  if (clean.length > max) clean = clean.slice(0, max).replace(/[\uD800-\uDBFF]$/, '');
  return clean;
}

// ---------------------------------------------------------------------------------------------------------------
// Operation -> action and resource, from the generated operation table and the contract's parameter names.
// ---------------------------------------------------------------------------------------------------------------

/** `refundOrder` -> refund, order; `exchangeOAuthToken` -> exchange, oauth, token. */
function camelWords(text: string): string[] {
  return text
    .replace(/OAuth/g, 'Oauth')
    .split(/(?=[A-Z])/)
    .map((w) => w.toLowerCase());
}

function singular(word: string): string {
  return word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word;
}

/** `payment-links` -> [payment, link]. */
function singularWords(segment: string): string[] {
  const words = segment.split(/[-_]/).filter(Boolean);
  return words.map((w, i) => (i === words.length - 1 ? singular(w) : w));
}

/** Removes the first run of `part` from `words` (after the verb); undefined when it is not there. */
function without(words: string[], part: string[]): string[] | undefined {
  for (let i = 1; i + part.length <= words.length; i++) {
    if (part.every((p, j) => words[i + j] === p)) return [...words.slice(0, i), ...words.slice(i + part.length)];
  }
  return undefined;
}

/** `refundOrder` on /orders/{id}/refund -> `orders.refund`; `createProductVariantField` -> `products.create_variant_field`. */
export function actionOf(operationId: string, path: string): string {
  const segment = path.split('/').find((s) => s.length > 0 && !s.startsWith('{')) ?? 'api';
  const words = camelWords(operationId);
  const verb = without(words, singularWords(segment)) ?? without(words, segment.split(/[-_]/).filter(Boolean)) ?? words;
  return `${segment.replace(/-/g, '_')}.${verb.join('_')}`;
}

/** Every operation of the contract with what its entries say (built once, when the sink is made). */
export function auditedOperations(spec: SpecDocument): Map<string, AuditedOperation> {
  const table = new Map<string, AuditedOperation>();
  const components = (spec.components.parameters ?? {}) as Record<string, { name?: string; in?: string }>;
  for (const [operationId, { method, path }] of Object.entries(operations) as [
    string,
    { method: string; path: string },
  ][]) {
    const item = spec.paths[path] ?? {};
    const declared = [...(item.parameters ?? []), ...(item[method]?.parameters ?? [])] as {
      $ref?: string;
      name?: string;
      in?: string;
    }[];
    const segments = path.split('/').filter(Boolean);
    const first = segments.findIndex((s) => s.startsWith('{'));
    let resourceType = singularWords(segments[0] ?? 'api').join('_');
    let resourceParam: string | undefined;
    if (first >= 0) {
      resourceParam = segments[first]!.slice(1, -1);
      // The contract names its id parameters after the resource (ProductId, WebhookLogId, QuantityDealUniqid).
      const ref = declared
        .map((p) => (p.$ref ? p.$ref.split('/').pop()! : undefined))
        .find((name) => name && components[name]?.in === 'path' && components[name]?.name === resourceParam);
      const words = ref ? camelWords(ref[0]!.toLowerCase() + ref.slice(1)) : [];
      while (words.length > 1 && ['id', 'uniqid', 'code'].includes(words[words.length - 1]!)) words.pop();
      resourceType =
        words.length > 0 ? words.join('_') : singularWords(segments[first - 1] ?? segments[0] ?? 'api').join('_');
    }
    table.set(operationId, { action: actionOf(operationId, path), resourceType, resourceParam });
  }
  return table;
}

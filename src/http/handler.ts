// The shape every operation handler has: a typed request in, data out. Handlers never see express; the glue in
// src/http/api.ts builds the context and turns the result into the envelope.
import type { Kysely, Transaction } from 'kysely';
import type { ReadDb } from '../../db/queries/shop-scope';
import type { Database } from '../../db/tables';
import type { AuthContext } from '../auth/authenticate';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { CursorCodec, Page } from '../platform/cursor';
import type { operations as Ops } from '../generated/api-types';
import type { OperationId, operations as operationTable } from '../generated/operations';
import type { Effects, ShopWrite } from '../platform/unit-of-work';
import type { Clock } from '../platform/clock';
import type { SecretBox } from '../platform/secret-box';
import type { NewAuditEntry } from '../../db/queries/audit-entries';
import type { Gateways } from '../integrations/gateway-accounts';

export interface Services {
  config: Config;
  logger: Logger;
  cursors: CursorCodec;
  /**
   * What time-dependent rules read (injectable: tests move it). In a request of a test shop whose test clock was
   * advanced, the shop's clock (src/domain/test-mode.ts); `realClock` is the process's in every request.
   */
  clock: Clock;
  realClock: Clock;
  /** Encrypts the secrets the server must recover (webhook signing secrets). */
  secrets: SecretBox;
  /** The payment providers and the shops' accounts at them (src/domain/payments/providers.ts). */
  gateways: Gateways;
}

type Part<Id extends OperationId, K extends 'path' | 'query'> = Ops[Id] extends { parameters: { [P in K]?: infer T } }
  ? NonNullable<T>
  : Record<string, never>;
type BodyOf<Id extends OperationId> = Ops[Id] extends { requestBody?: { content: { 'application/json': infer B } } }
  ? B
  : undefined;

/** A GET reads; every other method changes state and runs in the unit of work. */
export type IsWrite<Id extends OperationId> = (typeof operationTable)[Id]['method'] extends 'get' ? false : true;

/**
 * The database as the operation may use it: a read gets a ReadDb (writing does not compile, and is refused at run
 * time), a write gets the unit of work's Transaction, so functions that lock rows or must commit together can
 * demand one.
 */
export type DbFor<Id extends OperationId> = IsWrite<Id> extends true ? Transaction<Database> : ReadDb;

export interface OperationContext<Id extends OperationId = OperationId> {
  operationId: Id;
  params: Part<Id, 'path'>;
  query: Part<Id, 'query'>;
  body: BodyOf<Id>;
  headers: Record<string, string | string[] | undefined>;
  auth: AuthContext;
  db: DbFor<Id>;
  /** Side effects (events, mail, audit) committed with the change; only writes have them. */
  effects: IsWrite<Id> extends true ? Effects : undefined;
  /**
   * The write of the caller's shop (transaction, shop id, effects, clock): what every domain write function takes.
   * Only writes have it (the public OAuth writes, which act for no shop, neither).
   */
  write: IsWrite<Id> extends true ? ShopWrite : undefined;
  services: Services;
  requestId: string;
  /**
   * Set only when a single-statement write (see `singleStatement`) runs outside the unit of work: the request's
   * audit entry, which its one statement writes when it accepts the request. `db` is then the pool itself (typed
   * as the transaction it stands in for: a single statement is atomic on its own).
   */
  inlineAudit?: NewAuditEntry;
}

/**
 * `data` becomes `{ data }`; a `page` becomes `{ data, pagination }`; `raw` is sent as is (OAuth token responses);
 * `html` is sent as text/html (the hosted consent page, GET /oauth/authorize; reads only: never stored for replay).
 */
export type OperationResult =
  | { status?: number; data: unknown; headers?: Record<string, string> }
  | { status?: number; page: Page<unknown>; headers?: Record<string, string> }
  | { status?: number; raw: unknown; headers?: Record<string, string> }
  | { status?: number; html: string; headers?: Record<string, string> };

export type OperationHandler<Id extends OperationId = OperationId> = (
  ctx: OperationContext<Id>,
) => Promise<OperationResult>;

export type HandlerMap = { [Id in OperationId]: OperationHandler<Id> };

/**
 * Marks a write handler that is ONE SQL statement, atomic by itself, answering 200, queuing no side effects, and
 * writing `ctx.inlineAudit` in that statement when it accepts the request. Without an Idempotency-Key it runs
 * outside the unit of work (no BEGIN, statement timeout, audit insert and COMMIT round trips around it): the hot
 * public call of a software seller, license validation, is one round trip to the database (src/http/api.ts).
 */
export function singleStatement<Id extends OperationId>(handler: OperationHandler<Id>): OperationHandler<Id> {
  return Object.assign(handler, { singleStatement: true as const });
}

/**
 * A write handler with a first step outside the transaction: `prepare` calls another service (a payment provider)
 * before the unit of work opens, so no transaction is held open across that call; its result reaches the handler
 * as `ctx.prepared`. It runs under the Idempotency-Key's claim (a replay never repeats it) and may write nothing.
 */
export function preparedWrite<Id extends OperationId, P>(
  prepare: (ctx: PrepareContext<Id>) => Promise<P>,
  handler: (ctx: OperationContext<Id>, prepared: P) => Promise<OperationResult>,
): OperationHandler<Id> {
  const run = ((ctx: OperationContext<Id> & { prepared?: P }) =>
    handler(ctx, ctx.prepared as P)) as OperationHandler<Id>;
  return Object.assign(run, { prepare });
}

/**
 * A prepare step's context: the request's, plus the primary database for short transactions of its own (a lease
 * that keeps two such steps from asking a provider at once) and reads that must not lag.
 */
export type PrepareContext<Id extends OperationId = OperationId> = OperationContext<Id> & { primary: Kysely<Database> };

/** The handler's step outside the transaction, if it has one (preparedWrite). */
export function prepareStep(handler: unknown): ((ctx: PrepareContext) => Promise<unknown>) | undefined {
  return (handler as { prepare?: (ctx: PrepareContext) => Promise<unknown> }).prepare;
}

export function isSingleStatement(handler: unknown): boolean {
  return (handler as { singleStatement?: unknown }).singleStatement === true;
}

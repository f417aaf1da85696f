// The shape every operation handler has: a typed request in, data out. Handlers never see express; the glue in
// src/http/api.ts builds the context and turns the result into the envelope.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import type { AuthContext } from '../auth/authenticate';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { CursorCodec, Page } from '../platform/cursor';
import type { operations as Ops } from '../generated/api-types';
import type { OperationId } from '../generated/operations';

export interface Services {
  config: Config;
  logger: Logger;
  cursors: CursorCodec;
}

type Part<Id extends OperationId, K extends 'path' | 'query'> = Ops[Id] extends { parameters: { [P in K]?: infer T } }
  ? NonNullable<T>
  : Record<string, never>;
type BodyOf<Id extends OperationId> = Ops[Id] extends { requestBody?: { content: { 'application/json': infer B } } }
  ? B
  : undefined;

export interface OperationContext<Id extends OperationId = OperationId> {
  operationId: Id;
  params: Part<Id, 'path'>;
  query: Part<Id, 'query'>;
  body: BodyOf<Id>;
  headers: Record<string, string | string[] | undefined>;
  auth: AuthContext;
  /** Inside a transaction for state-changing operations. */
  db: Kysely<Database>;
  services: Services;
  requestId: string;
}

/** `data` becomes `{ data }`; a `page` becomes `{ data, pagination }`; `raw` is sent as is (OAuth token responses). */
export type OperationResult =
  | { status?: number; data: unknown; headers?: Record<string, string> }
  | { status?: number; page: Page<unknown>; headers?: Record<string, string> }
  | { status?: number; raw: unknown; headers?: Record<string, string> };

export type OperationHandler<Id extends OperationId = OperationId> = (
  ctx: OperationContext<Id>,
) => Promise<OperationResult>;

export type HandlerMap = { [Id in OperationId]: OperationHandler<Id> };

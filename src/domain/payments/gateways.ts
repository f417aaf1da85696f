// Payment gateways: which ones a shop may use, and the adapters that start a checkout session at a SESSION gateway.
import { randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import { gatewayByCode, upsertGateway } from '../../../db/queries/gateways';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { Database, GatewayRow } from '../../../db/tables';
import { ApiError } from '../../errors';
import { newId } from '../../ids';

/** The local sandbox gateway (kind SESSION): the one session gateway this server runs itself. */
export const sandboxGatewayCode = 'SANDBOX';

/**
 * Whether a shop of this mode may offer the gateway: SANDBOX completes an order without money moving, so it is a
 * test-mode gateway only (issue 26); every other gateway is offered in both modes. The one place the rule lives:
 * shops get gateways, and sandbox sessions are honoured, only where it holds.
 */
export function gatewayOfferedIn(code: string, livemode: boolean): boolean {
  return code !== sandboxGatewayCode || !livemode;
}

/** Refuses a gateway a shop of this mode may not offer (the operator's `gateway set`, fixtures). */
export function assertGatewayOfferedIn(code: string, livemode: boolean): void {
  if (!gatewayOfferedIn(code, livemode))
    throw new ApiError(
      'GATEWAY_NOT_AVAILABLE',
      `The ${code} gateway exists only in test mode: use the shop's test mode (a test key, mdk_test_...).`,
    );
}

/** The shop's active gateway with this code; GATEWAY_NOT_AVAILABLE when it is unknown or switched off. */
export async function requireActiveGateway(db: ReadDb, shopId: string, code: string): Promise<GatewayRow> {
  const gateway = await gatewayByCode(db, shopId, code);
  if (gateway === undefined || !gateway.active)
    throw new ApiError('GATEWAY_NOT_AVAILABLE', `The gateway ${code} is not available for this shop.`);
  return gateway;
}

export interface SessionInput {
  shopId: string;
  orderUniqid: string;
  /** Canonical decimal string in the currency's minor unit. */
  amount: string;
  currency: string;
  returnUrl: string;
}

export interface GatewaySession {
  sessionId: string;
  checkoutUrl: string;
}

export interface GatewayAdapter {
  startSession(input: SessionInput): GatewaySession;
}

/** Every session id the sandbox hands out fits it (its page answers any other as not found, without a look-up). */
export const sandboxSessionShape = /^sbx_[0-9a-f]{32}$/;

/** The local sandbox: a session id and a page of this server that plays the gateway's hosted checkout. */
export function sandboxAdapter(publicUrl: string): GatewayAdapter {
  return {
    startSession() {
      const sessionId = `sbx_${randomBytes(16).toString('hex')}`;
      return { sessionId, checkoutUrl: sandboxCheckoutUrl(publicUrl, sessionId) };
    },
  };
}

function sandboxCheckoutUrl(publicUrl: string, sessionId: string): string {
  return `${publicUrl}/sandbox/checkout/${sessionId}`;
}

/** The checkout address of a session a gateway started earlier (read again later), if this server runs that gateway. */
export function sessionCheckoutUrl(gateway: string, sessionId: string, publicUrl: string): string | undefined {
  return gateway === sandboxGatewayCode ? sandboxCheckoutUrl(publicUrl, sessionId) : undefined;
}

/**
 * The adapter of a SESSION gateway. Only SANDBOX runs locally; any other session gateway is configured but has
 * no integration in this server, so forcing it is refused rather than returning a checkout that cannot work.
 */
export function adapterFor(gateway: GatewayRow, publicUrl: string): GatewayAdapter {
  if (gateway.kind === 'SESSION' && gateway.code === sandboxGatewayCode) return sandboxAdapter(publicUrl);
  throw new ApiError(
    'GATEWAY_NOT_AVAILABLE',
    `The gateway ${gateway.code} has no session integration on this server; use SANDBOX or a hosted gateway.`,
  );
}

/**
 * Every new test shop gets the sandbox, so checkout can be walked through end to end at once (it can be switched
 * off). Live shops never have it (gatewayOfferedIn).
 */
export async function addSandboxGateway(trx: Transaction<Database>, shopId: string): Promise<GatewayRow> {
  return upsertGateway(trx, shopId, { id: newId('gw'), code: sandboxGatewayCode, kind: 'SESSION' });
}

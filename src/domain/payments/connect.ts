// Connecting a shop to a payment provider (the operator's `gateway connect`): the credentials are checked against
// the shop's mode without calling anyone (a live key for a test shop is refused), then with one cheap call to the
// provider (a wrong key is refused now, not at a buyer's checkout; PayPal's webhook id is read and must post to this
// shop's webhook route), then sealed and stored with the shop's gateway row, which makes the gateway offered at
// checkout and in `enabledPaymentMethods`.
import type { Kysely } from 'kysely';
import { upsertGatewayConnection } from '../../../db/queries/gateway-connections';
import { upsertGateway } from '../../../db/queries/gateways';
import type { Database } from '../../../db/tables';
import { newId } from '../../ids';
import { ProviderError, type ProviderCode } from '../../integrations/gateway-provider';
import type { Gateways } from '../../integrations/gateway-accounts';

/** A connection refused: the message names what to fix and holds no secret. */
export class GatewayConnectError extends Error {}

export interface ConnectInput {
  shop: { id: string; livemode: boolean };
  code: ProviderCode;
  /** By field name (ConnectField.name). */
  credentials: Record<string, string>;
  /** The coins or networks of a crypto provider's checkout (BTCPay payment method ids). */
  coins?: string[];
  publicUrl: string;
  now: Date;
}

export interface Connection {
  gateway: ProviderCode;
  mode: 'live' | 'test';
  webhook_url: string;
  /** The non-secret fields given (a store id, a server URL). */
  settings: Record<string, string>;
}

/** Where the provider posts this shop's webhooks (src/http/gateway-webhooks.ts). */
export function gatewayWebhookUrl(publicUrl: string, code: string, shopId: string): string {
  return `${publicUrl}/webhooks/gateways/${code.toLowerCase()}/${shopId}`;
}

/** The coins a BTCPay checkout offers unless the operator names others: on-chain bitcoin and Lightning. */
const defaultCoins = ['BTC-CHAIN', 'BTC-LN'];

export async function connectGateway(
  db: Kysely<Database>,
  gateways: Gateways,
  input: ConnectInput,
): Promise<Connection> {
  const { shop, code } = input;
  const provider = gateways.provider(code);
  if (!provider) throw new GatewayConnectError(`${code} has no integration on this server`);
  const credentials: Record<string, string> = {};
  for (const field of provider.fields) {
    const value = input.credentials[field.name]?.trim();
    if (value) credentials[field.name] = value;
    else if (!field.optional) throw new GatewayConnectError(`${field.env} (or "${field.name}" on stdin) is required`);
  }
  const unknown = Object.keys(input.credentials).filter((k) => !provider.fields.some((f) => f.name === k));
  if (unknown.length) throw new GatewayConnectError(`unknown field(s) for ${code}: ${unknown.join(', ')}`);
  const mismatch = provider.modeMismatch(credentials, shop.livemode);
  if (mismatch) throw new GatewayConnectError(mismatch);
  const webhookUrl = gatewayWebhookUrl(input.publicUrl, code, shop.id);
  try {
    await provider.verifyCredentials(gateways.accountOf(code, shop.livemode, credentials), { webhookUrl });
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    const mode = shop.livemode ? 'live' : 'test';
    // 'refused': the credentials work but cannot serve this shop (a key of the other mode, a webhook id PayPal does
    // not know or that posts elsewhere); 'unavailable': nothing was learnt, try again.
    throw new GatewayConnectError(
      err.failure === 'unauthorized'
        ? `${code} refused these credentials (${mode} mode): ${err.message}`
        : err.failure === 'refused'
          ? `${code} refused this connection (${mode} mode): ${err.message}`
          : `${code} could not check these credentials: ${err.message}`,
    );
  }
  const settings = Object.fromEntries(
    provider.fields
      .filter((f) => !f.secret && credentials[f.name] !== undefined)
      .map((f) => [f.name, credentials[f.name]!]),
  );
  const crypto = code === 'BTCPAY';
  await db.transaction().execute(async (trx) => {
    await upsertGatewayConnection(trx, shop.id, {
      gateway: code,
      sealed_credentials: gateways.seal(shop.id, code, credentials),
      settings,
      now: input.now,
    });
    await upsertGateway(trx, shop.id, {
      id: newId('gw'),
      code,
      kind: crypto ? 'CRYPTO' : 'SESSION',
      coins: crypto ? (input.coins?.length ? input.coins : defaultCoins) : [],
      active: true,
    });
  });
  return {
    gateway: code,
    mode: shop.livemode ? 'live' : 'test',
    webhook_url: webhookUrl,
    settings,
  };
}

// `gateway connect stripe|paypal|btcpay`: the operator connects a shop (in one mode) to a payment provider. Secrets
// come from the environment or from stdin (`--secrets-stdin`, a JSON object), never from an argument (which `ps` and
// shell histories show); they are checked with the provider, sealed, and never printed again.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import type { Config } from '../config';
import { connectGateway, GatewayConnectError, type Connection } from '../domain/payments/connect';
import { createGateways } from '../integrations/gateway-accounts';
import { gatewayProviders } from '../integrations';
import type { GatewayProvider, ProviderCode } from '../integrations/gateway-provider';
import type { Clock } from '../platform/clock';
import { loadSecretBox } from '../platform/secret-box';
import { shopById } from '../../db/queries/shops';
import { AdminError } from './admin';

export const connectCommands: Record<string, ProviderCode> = {
  'gateway connect stripe': 'STRIPE',
  'gateway connect paypal': 'PAYPAL',
  'gateway connect btcpay': 'BTCPAY',
};

/**
 * The fields to connect with, by name: `--secrets-stdin` JSON (keys are the field names or their environment names),
 * else the environment; `--url` gives BTCPay Server's address. Read before the database is opened.
 */
export function connectFields(
  code: ProviderCode,
  options: { secretsStdin: boolean; url?: string },
  env: NodeJS.ProcessEnv,
  readStdin: () => string,
  providers: readonly GatewayProvider[] = gatewayProviders,
): Record<string, string> {
  const provider = providers.find((p) => p.code === code)!;
  let given: Record<string, unknown> = {};
  if (options.secretsStdin) {
    try {
      given = JSON.parse(readStdin()) as Record<string, unknown>;
    } catch {
      throw new AdminError('--secrets-stdin: stdin is not a JSON object');
    }
    if (given === null || typeof given !== 'object' || Array.isArray(given))
      throw new AdminError('--secrets-stdin: stdin is not a JSON object');
  }
  const fields: Record<string, string> = {};
  for (const f of provider.fields) {
    const value = given[f.name] ?? given[f.env] ?? (f.name === 'url' ? options.url : undefined) ?? env[f.env];
    if (value !== undefined && typeof value !== 'string') throw new AdminError(`${f.name} must be a string`);
    if (value) fields[f.name] = value;
  }
  const known = new Set(provider.fields.flatMap((f) => [f.name, f.env]));
  const unknown = Object.keys(given).filter((k) => !known.has(k));
  if (unknown.length) throw new AdminError(`--secrets-stdin: unknown field(s) ${unknown.join(', ')} for ${code}`);
  return fields;
}

export async function connectShopGateway(
  db: Kysely<Database>,
  config: Config,
  clock: Clock,
  input: { shopId: string; code: ProviderCode; fields: Record<string, string>; coins?: string },
  providers: readonly GatewayProvider[] = gatewayProviders,
): Promise<Connection> {
  // The CLI has resolved --shop and --mode to the shop of that mode already.
  const shop = await shopById(db, input.shopId);
  if (!shop) throw new AdminError(`No shop with id ${input.shopId}`);
  const gateways = createGateways(providers, config.gatewayBaseUrls, await loadSecretBox(db, config.webhookSecretsKey));
  const coins = input.coins
    ?.split(',')
    .map((c) => c.trim().toUpperCase())
    .filter(Boolean);
  try {
    return await connectGateway(db, gateways, {
      shop,
      code: input.code,
      credentials: input.fields,
      coins,
      publicUrl: config.publicUrl,
      now: clock.now(),
    });
  } catch (err) {
    if (err instanceof GatewayConnectError) throw new AdminError(`gateway connect: ${err.message}`);
    throw err;
  }
}

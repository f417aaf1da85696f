// The providers behind the SESSION and CRYPTO gateways a shop connected (Stripe, PayPal, BTCPay Server): which
// adapter speaks for a gateway code, and the shop's account at it (its credentials opened, the API address
// resolved). The only code that opens a connection's sealed credentials.
import { gatewayConnection } from '../../db/queries/gateway-connections';
import type { ReadDb } from '../../db/queries/shop-scope';
import { ApiError } from '../errors';
import {
  isProviderCode,
  type GatewayBaseUrlName,
  ProviderError,
  type GatewayProvider,
  type ProviderAccount,
  type ProviderCode,
} from './gateway-provider';
import type { SecretBox } from '../platform/secret-box';

export interface Gateways {
  /** The adapter of a gateway code, when this server has one (SANDBOX and manual gateways have none). */
  provider(code: string): GatewayProvider | undefined;
  /** The shop's account at the provider: undefined when the shop has not connected it. */
  account(
    db: ReadDb,
    shop: { id: string; livemode: boolean },
    code: ProviderCode,
  ): Promise<ProviderAccount | undefined>;
  /** The account built from credentials being connected (not stored yet). */
  accountOf(code: ProviderCode, livemode: boolean, credentials: Record<string, string>): ProviderAccount;
  /** Seals a connection's credentials for its row (shop, provider). */
  seal(shopId: string, code: ProviderCode, credentials: Record<string, string>): Buffer;
}

/** What a connection's credentials are sealed with: they open only on that shop's row for that provider. */
function connectionContext(shopId: string, code: string): string {
  return `gateway-connection:${shopId}:${code}`;
}

export function createGateways(
  providers: readonly GatewayProvider[],
  baseUrls: Partial<Record<GatewayBaseUrlName, string>>,
  secrets: SecretBox,
): Gateways {
  const byCode = new Map<string, GatewayProvider>(providers.map((p) => [p.code, p]));
  const apiBase = (provider: GatewayProvider, livemode: boolean, credentials: Record<string, string>): string => {
    const override = livemode
      ? baseUrls[provider.code as GatewayBaseUrlName]
      : (baseUrls[`${provider.code}_SANDBOX` as GatewayBaseUrlName] ?? baseUrls[provider.code as GatewayBaseUrlName]);
    const base = override ?? provider.defaultApiBase(livemode) ?? credentials.url;
    if (!base) throw new ProviderError('unauthorized', `${provider.code}: the connection has no server address`);
    return base.replace(/\/+$/, '');
  };
  const accountOf = (code: ProviderCode, livemode: boolean, credentials: Record<string, string>) => {
    const provider = byCode.get(code);
    if (!provider)
      throw new ApiError('GATEWAY_NOT_AVAILABLE', `The gateway ${code} has no integration on this server.`);
    return { livemode, credentials, apiBase: apiBase(provider, livemode, credentials) };
  };
  return {
    provider: (code) => (isProviderCode(code) ? byCode.get(code) : undefined),
    async account(db, shop, code) {
      const row = await gatewayConnection(db, shop.id, code);
      if (!row) return undefined;
      const credentials = JSON.parse(secrets.open(row.sealed_credentials, connectionContext(shop.id, code))) as Record<
        string,
        string
      >;
      return accountOf(code, shop.livemode, credentials);
    },
    accountOf,
    seal: (shopId, code, credentials) => secrets.seal(JSON.stringify(credentials), connectionContext(shopId, code)),
  };
}

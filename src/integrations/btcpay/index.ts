// BTCPay Server (Greenfield API v1) behind GatewayProvider. BTCPay is self-hosted: the connection's `url` is the
// API base (there is no provider address to default to), the store id names the shop's store on that server, and
// the API key needs the store permissions btcpay.store.canviewstoresettings, canviewinvoices, cancreateinvoice,
// canviewpullpayments/canmanagepullpayments and cancreatepullpayments.
import { ProviderError, type ConnectField, type GatewayProvider, type ProviderAccount } from '../gateway-provider';
import { greenfield, segment, storeId, type BtcpayClientOptions } from './client';
import { refund } from './refund';
import { readSession, startSession } from './session';
import { parseWebhook } from './webhook';

const fields: readonly ConnectField[] = [
  // The server's address: given as `--url` at connect time, shown by `gateway list`.
  { name: 'url', env: 'BTCPAY_URL', secret: false },
  { name: 'api_key', env: 'BTCPAY_API_KEY', secret: true },
  { name: 'store_id', env: 'BTCPAY_STORE_ID', secret: false },
  { name: 'webhook_secret', env: 'BTCPAY_WEBHOOK_SECRET', secret: true },
];

async function verifyCredentials(account: ProviderAccount, options: BtcpayClientOptions): Promise<void> {
  const answer = await greenfield(
    account,
    { method: 'GET', path: `/api/v1/stores/${segment(storeId(account))}` },
    options,
  );
  if (answer.status === 404) throw new ProviderError('unauthorized', 'BTCPay Server has no such store');
  const body = answer.body as { id?: unknown } | null;
  if (
    typeof body !== 'object' ||
    body === null ||
    (body.id !== undefined && body.id !== account.credentials.store_id)
  ) {
    throw new ProviderError('unavailable', "BTCPay Server's answer is not the store asked for");
  }
}

export function createBtcpayProvider(options: BtcpayClientOptions = {}): GatewayProvider {
  return {
    code: 'BTCPAY',
    defaultApiBase: () => undefined,
    fields,
    // BTCPay keys have no test/live kind: a test shop should point at a testnet or regtest server, which cannot be
    // told from the credentials without calling it. So nothing is refused here.
    modeMismatch: () => null,
    verifyCredentials: (account) => verifyCredentials(account, options),
    startSession: (account, input) => startSession(account, input, options),
    readSession: (account, sessionId) => readSession(account, sessionId, options),
    refund: (account, request) => refund(account, request, options),
    parseWebhook: (account, rawBody, headers) => Promise.resolve().then(() => parseWebhook(account, rawBody, headers)),
  };
}

export const btcpayProvider: GatewayProvider = createBtcpayProvider();

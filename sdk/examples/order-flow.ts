// Create an order, complete it, and verify the signed `order:completed` webhook that the API then delivers.
//
//   npx tsx sdk/examples/order-flow.ts --base-url http://localhost:3000/dev/v1 --api-key <key> \
//     --webhook-url http://127.0.0.1:4000/webhooks --webhook-secret whsec_...
//
// Every option can also come from the environment: BASE_URL, API_KEY, WEBHOOK_URL, WEBHOOK_SECRET, and optionally
// PRODUCT_ID (default: the shop's first product) and WEBHOOK_TIMEOUT_SECONDS (default 30). WEBHOOK_URL is the URL
// of a webhook endpoint of the shop subscribed to `order:completed` (or `*`), and WEBHOOK_SECRET its `whsec_` secret;
// this script listens on that URL's host and port (so it must be an address of this machine) while it runs.
// In your own project, import from '@merchant-developer-api/sdk' instead of '../src'.
import { createServer, type IncomingMessage } from 'node:http';
import { parseArgs } from 'node:util';
import { createMerchantClient, idempotencyKey, verifyWebhook, type WebhookEvent } from '../src';

function settings() {
  const { values } = parseArgs({
    options: {
      'base-url': { type: 'string' },
      'api-key': { type: 'string' },
      'webhook-url': { type: 'string' },
      'webhook-secret': { type: 'string' },
      'product-id': { type: 'string' },
    },
  });
  const get = (arg: keyof typeof values, env: string, required = true) => {
    const value = values[arg] ?? process.env[env];
    if (!value && required) throw new Error(`--${arg} or ${env} is required (see sdk/examples/order-flow.ts)`);
    return value;
  };
  return {
    baseUrl: get('base-url', 'BASE_URL')!,
    apiKey: get('api-key', 'API_KEY')!,
    webhookUrl: new URL(get('webhook-url', 'WEBHOOK_URL')!),
    webhookSecret: get('webhook-secret', 'WEBHOOK_SECRET')!,
    productId: get('product-id', 'PRODUCT_ID', false),
    timeoutMs: Number(process.env.WEBHOOK_TIMEOUT_SECONDS ?? 30) * 1000,
  };
}

/** The data of a call, or an Error with the API's `{ error: { code, message } }`. */
function must<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.data !== undefined) return result.data;
  const error = (result.error as { error?: { code?: string; message?: string } } | undefined)?.error;
  throw new Error(`${what}: HTTP ${result.response.status} ${error?.code ?? ''} ${error?.message ?? ''}`.trim());
}

async function rawBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function main(): Promise<void> {
  const config = settings();
  const client = createMerchantClient({ baseUrl: config.baseUrl, apiKey: config.apiKey });

  // The receiver believes a delivery only once its signature checks out; verified events go to `onEvent`.
  let onEvent: (event: WebhookEvent, webhookId: string) => void = () => undefined;
  const receiver = createServer(async (req, res) => {
    if (req.method !== 'POST' || req.url !== config.webhookUrl.pathname + config.webhookUrl.search) {
      res.writeHead(404).end();
      return;
    }
    const body = await rawBody(req); // the exact bytes that were signed: never a re-serialised JSON
    let event: WebhookEvent;
    try {
      event = verifyWebhook(body, req.headers, config.webhookSecret);
    } catch (err) {
      console.log(`webhook rejected: ${(err as Error).message}`);
      res.writeHead(400).end();
      return;
    }
    res.writeHead(204).end(); // acknowledge at once: slow work belongs in a queue of your own
    onEvent(event, String(req.headers['webhook-id']));
  });
  await new Promise<void>((resolve, reject) => {
    receiver.once('error', reject);
    receiver.listen(Number(config.webhookUrl.port || 80), config.webhookUrl.hostname, resolve);
  });

  try {
    const productId =
      config.productId ??
      must(await client.GET('/products', { params: { query: { limit: 1 } } }), 'list products').data[0]?.id;
    if (!productId) throw new Error('the shop has no product: create one, or pass --product-id');

    // An Idempotency-Key makes the create safe to retry: the same key and body replay the stored response.
    const key = idempotencyKey();
    const create = () =>
      client.POST('/orders', {
        params: { header: { 'Idempotency-Key': key } },
        body: { email: 'buyer@example.com', items: [{ product_id: productId, quantity: 1 }] },
      });
    const created = must(await create(), 'create order').data;
    console.log(`order created: ${created.id} ${created.status} ${created.total} ${created.currency}`);
    const retry = await create();
    const status = retry.response.headers.get('Idempotency-Status');
    console.log(`retry with the same Idempotency-Key: ${status}, order ${must(retry, 'retry').data.id}`);

    // Listen before completing, so that no delivery can arrive unseen.
    const delivered = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no verified order:completed webhook within ${config.timeoutMs} ms`)),
        config.timeoutMs,
      );
      onEvent = (event, webhookId) => {
        console.log(`webhook verified: ${event.event} ${webhookId}`);
        if (event.event === 'order:completed' && event.data.id === created.id) {
          clearTimeout(timer);
          resolve(`${event.event} ${webhookId} for ${event.data.id} (${event.data.status})`);
        }
      };
    });

    const completed = must(
      await client.POST('/orders/{id}/complete', {
        params: { path: { id: created.id }, header: { 'Idempotency-Key': idempotencyKey() } },
        body: { note: 'Paid by bank transfer' },
      }),
      'complete order',
    ).data;
    if (!('id' in completed)) throw new Error(`order ${created.id}: ${completed.message}`);
    console.log(`order completed: ${completed.id} ${completed.status} ${completed.payment_status}`);

    console.log(`order:completed webhook verified: ${await delivered}`);
  } finally {
    receiver.close();
    receiver.closeAllConnections();
  }
}

main().catch((err: unknown) => {
  console.error((err as Error).message);
  process.exit(1);
});

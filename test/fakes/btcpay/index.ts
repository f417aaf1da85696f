// A local BTCPay Server for the tests: a real node:http server on port 0 serving the Greenfield routes the adapter
// uses, the checkout page, and the store's webhooks, all held to the pinned document
// (test/fixtures/providers/btcpay/openapi.json). See ProviderFake for the shape every provider fake offers.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import Decimal from 'decimal.js';
import document from '../../fixtures/providers/btcpay/openapi.json';
import { createOpenApiCheck } from '../openapi-check';
import type { FakeFault, FakeRefund, FakeSession, FakeWebhook, ProviderFake } from '../provider-fake';
import * as actions from './actions';
import { handleApi, type ApiState } from './api';
import { afterAction, pageHtml, partAmount, type PageAction } from './hosted-page';
import { base58Id, type FakeInvoice, type FakePullPayment, type FakeStore } from './state';
import { WebhookSender, type Delivery } from './webhooks';

export interface BtcpayFakeOptions {
  /** Waits between automatic webhook redeliveries, ms (BTCPay: 10 s, 1 min, 10 min...). */
  retryDelaysMs?: number[];
  /** Play a server older than v2.1.2, whose invoices carry no paidAmount. */
  omitPaidAmount?: boolean;
}

export interface BtcpayFake extends ProviderFake {
  /** The rest of an invoice paid on chain and waiting for confirmations (Processing); `pay` confirms it. */
  process(sessionId: string, options?: { webhooks?: boolean }): Promise<void>;
  /** Waits for every automatic webhook send under way. */
  idle(): Promise<void>;
}

const webhookSchemas = Object.fromEntries(
  Object.entries((document as { 'x-webhooks': Record<string, unknown> })['x-webhooks']).map(([type, item]) => {
    const ref = JSON.stringify(item).match(/#\/components\/schemas\/([A-Za-z]+)/)?.[1];
    return [type, ref];
  }),
) as Record<string, string | undefined>;

function sessionWords(invoice: FakeInvoice): string {
  if (invoice.status === 'New') return invoice.additionalStatus === 'PaidPartial' ? 'partial' : 'open';
  return { Processing: 'processing', Settled: 'paid', Invalid: 'failed', Expired: 'expired' }[invoice.status];
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function query(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key);
    out[key] = values.length === 1 ? values[0]! : values;
  }
  return out;
}

export async function createBtcpayFake(options: BtcpayFakeOptions = {}): Promise<BtcpayFake> {
  const check = createOpenApiCheck(document);
  const violations: string[] = [];
  const requests: { method: string; path: string; idempotencyKey: string | undefined }[] = [];
  const faults: FakeFault[] = [];
  const sockets = new Set<Socket>();
  let muted = false;

  const sender = new WebhookSender({
    retryDelaysMs: options.retryDelaysMs ?? [50, 100, 150],
    check(type, body) {
      const schema = webhookSchemas[type];
      if (!schema) violations.push(`webhook ${type}: not an event of the document`);
      else violations.push(...check.schema(schema, body).map((v) => `webhook ${type}: ${v}`));
    },
  });

  const state: ApiState = {
    baseUrl: '',
    stores: [],
    invoices: new Map(),
    pullPayments: [],
    omitPaidAmount: options.omitPaidAmount ?? false,
    emit: (store, type, event) => {
      if (!muted) sender.emit(store, type, event);
    },
  };

  const storeOf = (invoice: FakeInvoice): FakeStore => state.stores.find((s) => s.id === invoice.storeId)!;
  const invoiceOf = (id: string): FakeInvoice => {
    const invoice = state.invoices.get(id);
    if (!invoice) throw new Error(`the fake has no invoice ${id}`);
    return invoice;
  };
  /** Runs an action with its webhooks, or silently (webhooks: false), as the test asks. */
  const act = (invoice: FakeInvoice, webhooks: boolean | undefined, action: (store: FakeStore) => void): void => {
    muted = webhooks === false;
    try {
      action(storeOf(invoice));
    } finally {
      muted = false;
    }
  };

  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
    res.end(text);
  }

  async function api(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    requests.push({ method, path: url.pathname, idempotencyKey: undefined });
    const text = await readBody(req);
    const fault = faults.shift();
    if (fault === 'timeout') return; // never answered; closed with the server
    if (fault === 'server-error') return send(res, 500, { code: 'unhandled-exception', message: 'An error occurred' });
    if (fault === 'rate-limited')
      return send(res, 429, { code: 'rate-limited', message: 'Too many requests' }, { 'Retry-After': '7' });
    if (fault === 'garbage') {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      return void res.end('<html><body>502 Bad Gateway (nginx)</body></html>');
    }

    let body: unknown = undefined;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        violations.push(`${method} ${url.pathname}: the request body is not JSON`);
        return send(res, 422, [{ path: '', message: 'The request body is not valid JSON' }]);
      }
    }
    const q = query(url);
    const broken = check.request(method, url.pathname, { query: q, body });
    if (broken.length > 0) {
      violations.push(...broken);
      // BTCPay's model binding refuses what does not fit its request types with a 422 validation array.
      const answer = { status: 422, body: broken.map((message) => ({ path: '', message })) };
      violations.push(...check.response(method, url.pathname, answer.status, answer.body));
      return send(res, answer.status, answer.body);
    }
    const answer = handleApi(state, {
      method,
      path: url.pathname,
      query: q,
      body,
      authorization: req.headers.authorization,
    });
    violations.push(...check.response(method, url.pathname, answer.status, answer.body));
    send(res, answer.status, answer.body);
  }

  async function page(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const match = /^\/i\/([^/]+)(?:\/(pay|pay-part|fail))?$/.exec(url.pathname);
    const invoice = match ? state.invoices.get(decodeURIComponent(match[1]!)) : undefined;
    if (!match || !invoice) {
      res.writeHead(404, { 'Content-Type': 'text/html' });
      return void res.end('<!doctype html><p>Not found</p>');
    }
    const action = match[2] as PageAction | undefined;
    if (!action) {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      return void res.end(pageHtml(invoice));
    }
    await readBody(req);
    if (req.method !== 'POST' || invoice.status !== 'New') {
      res.writeHead(303, { Location: `/i/${invoice.id}` });
      return void res.end();
    }
    act(invoice, true, (store) => {
      if (action === 'pay') actions.pay(store, invoice, state.emit);
      else if (action === 'pay-part') actions.pay(store, invoice, state.emit, partAmount(invoice));
      else actions.fail(store, invoice, state.emit);
    });
    res.writeHead(303, { Location: afterAction(invoice) });
    res.end();
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake.invalid');
    const handler = url.pathname.startsWith('/api/') ? api : page;
    handler(req, res, url).catch((error: unknown) => {
      violations.push(`the fake failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) send(res, 500, { code: 'fake-error', message: 'the fake failed' });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.baseUrl = baseUrl;

  const storeByCredentials = (credentials: Record<string, string>): FakeStore => {
    const values = new Set(Object.values(credentials));
    const store = state.stores.find((s) => values.has(s.apiKey) || values.has(s.id));
    if (!store) throw new Error('the fake has no store for these credentials');
    return store;
  };
  const deliveryStore = (delivery: Delivery): FakeStore => state.stores.find((s) => s.id === delivery.storeId)!;
  const asRefund = (pp: FakePullPayment): FakeRefund => ({
    providerRefundId: pp.id,
    paymentRef: pp.invoiceId ?? '',
    amount: pp.amount,
    currency: pp.currency,
    idempotencyKey: undefined,
  });
  const asSession = (invoice: FakeInvoice): FakeSession => ({
    sessionId: invoice.id,
    attemptId: typeof invoice.metadata.orderId === 'string' ? invoice.metadata.orderId : undefined,
    amount: invoice.amount,
    currency: invoice.currency,
    state: sessionWords(invoice),
    paymentRef: invoice.payments.length > 0 || invoice.status === 'Settled' ? invoice.id : undefined,
    livemode: invoice.livemode,
  });

  return {
    baseUrl,
    violations,
    requests,
    createAccount({ livemode, webhookUrl }) {
      const store: FakeStore = {
        id: base58Id(44),
        name: `Fake store ${state.stores.length + 1}`,
        apiKey: randomBytes(20).toString('hex'),
        livemode,
        webhook: { id: base58Id(22), secret: base58Id(30), url: webhookUrl },
      };
      state.stores.push(store);
      return {
        BTCPAY_URL: baseUrl,
        BTCPAY_API_KEY: store.apiKey,
        BTCPAY_STORE_ID: store.id,
        BTCPAY_WEBHOOK_SECRET: store.webhook.secret,
      };
    },
    setWebhookUrl(credentials, url) {
      storeByCredentials(credentials).webhook.url = url;
    },
    failNext(fault, count = 1) {
      for (let i = 0; i < count; i++) faults.push(fault);
    },
    async pay(sessionId, options = {}) {
      const invoice = invoiceOf(sessionId);
      if (options.currency && options.currency.toUpperCase() !== invoice.currency) {
        throw new Error(`invoice ${sessionId} is in ${invoice.currency}, not ${options.currency}`);
      }
      act(invoice, options.webhooks, (store) => actions.pay(store, invoice, state.emit, options.amount));
      await sender.idle();
    },
    async process(sessionId, options = {}) {
      const invoice = invoiceOf(sessionId);
      act(invoice, options.webhooks, (store) => actions.process(store, invoice, state.emit));
      await sender.idle();
    },
    async fail(sessionId, options = {}) {
      const invoice = invoiceOf(sessionId);
      act(invoice, options.webhooks, (store) => actions.fail(store, invoice, state.emit));
      await sender.idle();
    },
    async expire(sessionId, options = {}) {
      const invoice = invoiceOf(sessionId);
      act(invoice, options.webhooks, (store) => actions.expire(store, invoice, state.emit));
      await sender.idle();
    },
    session: (sessionId) => {
      const invoice = state.invoices.get(sessionId);
      return invoice ? asSession(invoice) : undefined;
    },
    sessions: () => [...state.invoices.values()].map(asSession),
    refunds: (paymentRef) =>
      state.pullPayments.filter((pp) => pp.invoiceId && (!paymentRef || pp.invoiceId === paymentRef)).map(asRefund),
    dashboardRefund(paymentRef, amount) {
      // BTCPay's invoice page "Issue refund": a pull payment named like the API's default. BTCPay sends no webhook
      // for it (there is no refund event), so nothing is sent.
      const invoice = invoiceOf(paymentRef);
      if (!new Decimal(amount).isFinite()) throw new Error(`not an amount: ${amount}`);
      state.pullPayments.push({
        id: base58Id(27),
        storeId: invoice.storeId,
        invoiceId: invoice.id,
        name: `Refund ${invoice.id}`,
        description: '',
        currency: invoice.currency,
        amount,
        archived: false,
        autoApproveClaims: false,
        createdBy: 'dashboard',
      });
      return Promise.resolve();
    },
    openDispute: () => Promise.reject(new Error('BTCPay Server has no disputes')),
    closeDispute: () => Promise.reject(new Error('BTCPay Server has no disputes')),
    webhooks: (): FakeWebhook[] => sender.deliveries,
    async resend(eventId, options = {}) {
      const delivery = sender.deliveries.find((d) => d.eventId === eventId);
      if (!delivery) throw new Error(`the fake sent no webhook ${eventId}`);
      return sender.resend(deliveryStore(delivery), delivery, options.tamper);
    },
    holdWebhooks(hold) {
      sender.hold(hold, deliveryStore);
    },
    idle: () => sender.idle(),
    async close() {
      await sender.idle();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

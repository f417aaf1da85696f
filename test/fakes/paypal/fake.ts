// A local PayPal for the tests: a real HTTP server on port 0 playing PayPal's REST API (OAuth token, Orders v2,
// capture refunds, the account's webhook, verify-webhook-signature), its buyer approval page, and its signed webhooks, in both of PayPal's
// modes: `{origin}/live` is api-m.paypal.com, `{origin}/sandbox` is api-m.sandbox.paypal.com, and an account lives in
// one of them only (its credentials get 401 at the other, as at PayPal). Every request and response is held to the
// pinned document (test/fixtures/providers/paypal/openapi.json; the token endpoint to oauth2-token.openapi.json);
// what breaks it is collected in `violations`, and a request that breaks it still gets PayPal's 400.
//
// PayPal-specific, beyond ProviderFake:
// - `pay()` approves (the order becomes APPROVED, CHECKOUT.ORDER.APPROVED is sent); it does not capture: the
//   merchant's capture call (our readSession) does, and sends PAYMENT.CAPTURE.COMPLETED. `pay(id, { amount })` makes
//   that capture smaller than the order (a fake-only lever for our amount check). `fail()` approves with a funding
//   source the capture finds DECLINED (PAYMENT.CAPTURE.DENIED). `captureAsMerchant()` captures as the merchant
//   would, for a test that needs a completed payment without our server in the loop. `failAt(path, fault)` plays a
//   fault on the next call to one path only (the call after the token call).
// - Injected faults are deliberate breaches of the document (a 429 PayPal's files do not declare, a body that is
//   not JSON): their responses are not checked; their requests are.
import { isDeepStrictEqual } from 'node:util';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Decimal from 'decimal.js';
import { minorUnit } from '../../../src/platform/money';
import { createOpenApiCheck } from '../openapi-check';
import type { FakeFault, FakeRefund, FakeSession, FakeWebhook, ProviderFake } from '../provider-fake';
import { errorBody, issueDetail, rateLimitedBody, webhooksErrorBody, type ErrorDetail } from './errors';
import { approvalPage, notFoundPage } from './hosted-page';
import {
  type Account,
  type CaptureRecord,
  captureJson,
  type DisputeRecord,
  disputeJson,
  type Money,
  minimalOrderJson,
  modeBase,
  now,
  orderJson,
  type OrderRecord,
  paypalId,
  accountId,
  type RefundRecord,
  refundJson,
  webhookJson,
} from './model';
import { authAlgo, signedString, verify } from './signing';
import { WebhookOutbox } from './webhooks';

const fixtures = join(__dirname, '../../fixtures/providers/paypal');
const document = JSON.parse(readFileSync(join(fixtures, 'openapi.json'), 'utf8')) as unknown;
const tokenDocument = JSON.parse(readFileSync(join(fixtures, 'oauth2-token.openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, object>>;
};

// One checker per process: it keeps no state of a fake, and compiling PayPal's schemas is the slow part of a start.
let checker: ReturnType<typeof createOpenApiCheck> | undefined;
function sharedCheck(): ReturnType<typeof createOpenApiCheck> {
  checker ??= createOpenApiCheck(document, {
    // PayPal's patterns are not valid under Ajv's `u` flag; its ppaas_* formats the checker accepts as its own.
    unicodeRegExp: false,
    extraOperations: { 'POST /v1/oauth2/token': tokenDocument.paths['/v1/oauth2/token']!.post! },
  });
  return checker;
}

export interface PayPalFakeOptions {
  /** Sends per webhook before the fake gives up (default 3). */
  webhookAttempts?: number;
  /** Delay between those sends (default 100 ms). */
  webhookRetryDelayMs?: number;
}

export interface PayPalFake extends ProviderFake {
  /** `{origin}/live`: GATEWAY_BASE_URLS' PAYPAL= (same as baseUrl). */
  readonly liveBaseUrl: string;
  /** `{origin}/sandbox`: GATEWAY_BASE_URLS' PAYPAL_SANDBOX=. */
  readonly sandboxBaseUrl: string;
  /** `PAYPAL=<live>,PAYPAL_SANDBOX=<sandbox>`, ready for GATEWAY_BASE_URLS. */
  readonly gatewayBaseUrls: string;
  apiBase(livemode: boolean): string;
  /** Captures an approved order as the merchant's capture call would (webhooks follow). */
  captureAsMerchant(sessionId: string, options?: { webhooks?: boolean }): Promise<void>;
  /** Resolves once every webhook send under way (with its retries) is over. */
  settled(): Promise<void>;
  /** Every OAuth access token issued so far: bearer secrets of their own, which a secrets scan looks for too. */
  accessTokens(): string[];
  /** The next API call to `path` (mode prefix left out: /v1/notifications/webhooks/ID) plays this fault. */
  failAt(path: string, fault: FakeFault): void;
}

interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

interface Stored {
  status: number;
  body: unknown;
}

const disputeReasons = [
  'MERCHANDISE_OR_SERVICE_NOT_RECEIVED',
  'MERCHANDISE_OR_SERVICE_NOT_AS_DESCRIBED',
  'UNAUTHORISED',
  'CREDIT_NOT_PROCESSED',
  'DUPLICATE_TRANSACTION',
  'INCORRECT_AMOUNT',
  'PAYMENT_BY_OTHER_MEANS',
  'CANCELED_RECURRING_BILLING',
  'PROBLEM_WITH_REMITTANCE',
  'OTHER',
];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** An amount's checks PayPal makes: decimals within the currency's minor unit, more than zero. */
function amountIssue(money: Money): string | undefined {
  const value = new Decimal(money.value);
  if (value.decimalPlaces() > minorUnit(money.currency_code)) return 'DECIMAL_PRECISION';
  if (value.lte(0)) return 'CANNOT_BE_ZERO_OR_NEGATIVE';
  return undefined;
}

export async function startPayPalFake(options: PayPalFakeOptions = {}): Promise<PayPalFake> {
  const check = sharedCheck();
  const violations: string[] = [];
  const requests: { method: string; path: string; idempotencyKey: string | undefined }[] = [];
  const accounts: Account[] = [];
  const tokens = new Map<string, Account>();
  const orders = new Map<string, OrderRecord>();
  const captures = new Map<string, CaptureRecord>();
  const refunds: RefundRecord[] = [];
  const disputes = new Map<string, DisputeRecord>();
  // PayPal-Request-Id -> the answer first given, per account and operation (PayPal keeps them 6 hours at least).
  const idempotent = new Map<string, Stored>();
  const faults: FakeFault[] = [];
  const pathFaults: { path: string; fault: FakeFault }[] = [];
  const hanging = new Set<http.ServerResponse>();
  let origin = '';

  const certUrlFor = (livemode: boolean): string =>
    `${modeBase(origin, livemode)}/v1/notifications/certs/${outbox.certName}`;
  const outbox = new WebhookOutbox(certUrlFor, {
    attempts: options.webhookAttempts ?? 3,
    retryDelayMs: options.webhookRetryDelayMs ?? 100,
  });

  // ---- webhooks -----------------------------------------------------------------------------------------------

  const resourceSchemas: Record<string, string> = {
    'checkout-order': 'orders__order',
    capture: 'payments__capture-2',
    refund: 'payments__refund',
    dispute: 'disputes__dispute',
  };

  function emit(
    account: Account,
    eventType: string,
    resourceType: string,
    resource: Record<string, unknown>,
    summary: string,
    send: boolean,
  ): void {
    const record = outbox.emit(
      account,
      eventType,
      resourceType,
      resource,
      summary,
      modeBase(origin, account.livemode),
      send,
    );
    const event = JSON.parse(record.hook.body) as unknown;
    for (const v of check.schema('webhooks__event', event)) violations.push(`webhook ${eventType}: ${v}`);
    for (const v of check.schema(resourceSchemas[resourceType]!, resource)) {
      violations.push(`webhook ${eventType} resource: ${v}`);
    }
  }

  // ---- state changes (the API's and the buyer's) ---------------------------------------------------------------

  function approvable(order: OrderRecord): boolean {
    return order.status === 'CREATED' || order.status === 'PAYER_ACTION_REQUIRED';
  }

  function approve(order: OrderRecord, how: { decline?: boolean; captureAmount?: Money; webhooks?: boolean }): void {
    if (!approvable(order)) throw new Error(`order ${order.id} is ${order.status}: it cannot be approved`);
    order.status = 'APPROVED';
    order.payerId = accountId();
    order.declineAtCapture = how.decline ?? false;
    order.captureAmount = how.captureAmount;
    order.updateTime = now();
    const base = modeBase(origin, order.account.livemode);
    emit(
      order.account,
      'CHECKOUT.ORDER.APPROVED',
      'checkout-order',
      orderJson(order, base, undefined),
      `An order has been approved by buyer`,
      how.webhooks ?? true,
    );
  }

  function capture(order: OrderRecord, webhooks: boolean): CaptureRecord {
    const at = now();
    const made: CaptureRecord = {
      id: paypalId(),
      order,
      status: order.declineAtCapture ? 'DECLINED' : 'COMPLETED',
      amount: order.captureAmount ?? order.amount,
      createTime: at,
      updateTime: at,
    };
    captures.set(made.id, made);
    order.status = 'COMPLETED';
    order.captureId = made.id;
    order.updateTime = at;
    const base = modeBase(origin, order.account.livemode);
    const resource = captureJson(made, base, { supplementary: true });
    if (made.status === 'COMPLETED') {
      emit(
        order.account,
        'PAYMENT.CAPTURE.COMPLETED',
        'capture',
        resource,
        `Payment completed for ${made.amount.value} ${made.amount.currency_code}`,
        webhooks,
      );
    } else {
      emit(
        order.account,
        'PAYMENT.CAPTURE.DENIED',
        'capture',
        resource,
        `Payment denied for ${made.amount.value} ${made.amount.currency_code}`,
        webhooks,
      );
    }
    return made;
  }

  function refunded(capture: CaptureRecord): Decimal {
    return refunds.filter((r) => r.capture === capture).reduce((sum, r) => sum.plus(r.amount.value), new Decimal(0));
  }

  /** A refund, or the 422 issue PayPal answers instead. */
  function refund(
    capture: CaptureRecord,
    amount: Money | undefined,
    note: string | undefined,
    requestId: string | undefined,
  ): RefundRecord | ErrorDetail {
    const refusal = (issue: string, extra: Omit<ErrorDetail, 'issue' | 'description'> = {}): ErrorDetail =>
      issueDetail(document, 'payments__captures.refund-422', issue, extra);
    if (capture.status === 'DECLINED') return refusal('REFUND_NOT_ALLOWED');
    const remaining = new Decimal(capture.amount.value).minus(refunded(capture));
    const asked = amount ?? { currency_code: capture.amount.currency_code, value: remaining.toFixed() };
    if (asked.currency_code !== capture.amount.currency_code) {
      return refusal('REFUND_CAPTURE_CURRENCY_MISMATCH');
    }
    const issue = amountIssue(asked);
    if (issue) return refusal(issue, { field: '/amount/value', location: 'body' });
    if (remaining.lte(0)) return refusal('CAPTURE_FULLY_REFUNDED');
    if (new Decimal(asked.value).gt(remaining)) return refusal('REFUND_AMOUNT_EXCEEDED');
    const made: RefundRecord = {
      id: paypalId(),
      capture,
      amount: asked,
      noteToPayer: note,
      requestId,
      createTime: now(),
    };
    refunds.push(made);
    capture.status = new Decimal(capture.amount.value).minus(refunded(capture)).lte(0)
      ? 'REFUNDED'
      : 'PARTIALLY_REFUNDED';
    capture.updateTime = made.createTime;
    const account = capture.order.account;
    emit(
      account,
      'PAYMENT.CAPTURE.REFUNDED',
      'refund',
      refundJson(made, modeBase(origin, account.livemode)),
      `A ${asked.value} ${asked.currency_code} capture payment was refunded`,
      true,
    );
    return made;
  }

  // ---- the API ---------------------------------------------------------------------------------------------------

  function bearer(req: http.IncomingMessage, livemode: boolean): Account | undefined {
    const auth = header(req, 'authorization');
    const token = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
    const account = token === undefined ? undefined : tokens.get(token);
    return account && account.livemode === livemode ? account : undefined;
  }

  function issueToken(req: http.IncomingMessage, livemode: boolean): Reply {
    const auth = header(req, 'authorization');
    const decoded = auth?.startsWith('Basic ') ? Buffer.from(auth.slice(6), 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const [id, secret] = colon < 0 ? ['', ''] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
    // A sandbox client at the live host (or the reverse) is unknown there: 401, as at PayPal.
    const account = accounts.find((a) => a.clientId === id && a.clientSecret === secret && a.livemode === livemode);
    if (!account)
      return { status: 401, body: { error: 'invalid_client', error_description: 'Client Authentication failed' } };
    const token = `A21AA${randomBytes(48).toString('base64url')}`;
    tokens.set(token, account);
    return {
      status: 200,
      body: {
        scope: 'https://uri.paypal.com/services/payments/payment https://uri.paypal.com/services/payments/refund',
        access_token: token,
        token_type: 'Bearer',
        app_id: `APP-${paypalId(17)}`,
        expires_in: 32400,
        nonce: `${now()}${randomBytes(16).toString('base64url')}`,
      },
    };
  }

  function replayOr(key: string | undefined, make: () => Reply, replayStatus: number): Reply {
    if (key !== undefined) {
      const stored = idempotent.get(key);
      if (stored) return { status: replayStatus, body: stored.body };
    }
    const reply = make();
    if (key !== undefined && reply.status < 300) idempotent.set(key, { status: reply.status, body: reply.body });
    return reply;
  }

  function createOrder(
    account: Account,
    body: Record<string, unknown>,
    requestId: string | undefined,
    full: boolean,
  ): Reply {
    const key = requestId === undefined ? undefined : `${account.clientId}|orders.create|${requestId}`;
    return replayOr(
      key,
      () => {
        const units = body.purchase_units as Record<string, unknown>[];
        const unit = units[0]!;
        const amount = unit.amount as Money;
        const refusal = (issue: string, field: string): Reply => ({
          status: 422,
          body: errorBody(422, [issueDetail(document, 'orders__422', issue, { field, location: 'body' })]),
        });
        if (body.intent !== 'CAPTURE') return refusal('UNSUPPORTED_INTENT', '/intent');
        const issue = amountIssue(amount);
        if (issue) return refusal(issue, "/purchase_units/@reference_id=='default'/amount/value");
        const paypal =
          isRecord(body.payment_source) && isRecord(body.payment_source.paypal)
            ? body.payment_source.paypal
            : undefined;
        const context =
          paypal && isRecord(paypal.experience_context)
            ? paypal.experience_context
            : isRecord(body.application_context)
              ? body.application_context
              : {};
        const at = now();
        const order: OrderRecord = {
          id: paypalId(),
          account,
          status: paypal ? 'PAYER_ACTION_REQUIRED' : 'CREATED',
          amount: { currency_code: amount.currency_code, value: amount.value },
          customId: str(unit.custom_id),
          invoiceId: str(unit.invoice_id),
          description: str(unit.description),
          returnUrl: str(context.return_url),
          cancelUrl: str(context.cancel_url),
          email: paypal ? str(paypal.email_address) : undefined,
          payerAction: paypal !== undefined,
          createTime: at,
          updateTime: at,
          payerId: undefined,
          declineAtCapture: false,
          captureAmount: undefined,
          captureId: undefined,
        };
        orders.set(order.id, order);
        const base = modeBase(origin, account.livemode);
        return { status: 201, body: full ? orderJson(order, base, undefined) : minimalOrderJson(order, base) };
      },
      200,
    );
  }

  function ownOrder(account: Account, id: string): OrderRecord | undefined {
    const order = orders.get(id);
    return order?.account === account ? order : undefined;
  }

  const notFound = (): Reply => ({
    status: 404,
    body: errorBody(404, [issueDetail(document, 'orders__404', 'INVALID_RESOURCE_ID', { location: 'path' })]),
  });

  function captureOrder(account: Account, id: string, requestId: string | undefined): Reply {
    const order = ownOrder(account, id);
    if (!order) return notFound();
    const key = requestId === undefined ? undefined : `${account.clientId}|orders.capture|${requestId}`;
    return replayOr(
      key,
      () => {
        const refusal = (issue: string): Reply => ({
          status: 422,
          body: errorBody(422, [issueDetail(document, 'orders__orders.capture-422', issue)]),
        });
        if (order.status === 'COMPLETED') return refusal('ORDER_ALREADY_CAPTURED');
        if (order.status !== 'APPROVED') return refusal('ORDER_NOT_APPROVED');
        const made = capture(order, true);
        // PayPal's capture answer carries the capture even in its minimal form: the full order is given either way.
        return { status: 201, body: orderJson(order, modeBase(origin, account.livemode), made) };
      },
      200,
    );
  }

  function refundCapture(
    account: Account,
    captureId: string,
    body: Record<string, unknown>,
    requestId: string | undefined,
  ): Reply {
    const made = captures.get(captureId);
    if (!made || made.order.account !== account) return notFound();
    const key = requestId === undefined ? undefined : `${account.clientId}|captures.refund|${requestId}`;
    return replayOr(
      key,
      () => {
        const result = refund(
          made,
          isRecord(body.amount) ? (body.amount as unknown as Money) : undefined,
          str(body.note_to_payer),
          requestId,
        );
        if (!('id' in result)) return { status: 422, body: errorBody(422, [result]) };
        return { status: 201, body: refundJson(result, modeBase(origin, account.livemode)) };
      },
      201,
    );
  }

  function verifySignature(account: Account, livemode: boolean, body: Record<string, unknown>): Reply {
    const failure = { status: 200, body: { verification_status: 'FAILURE' } };
    const transmissionId = String(body.transmission_id);
    const time = String(body.transmission_time);
    const webhookId = String(body.webhook_id);
    // The webhook must be this app's, the certificate this host's, the algorithm PayPal's.
    if (webhookId !== account.webhookId || body.cert_url !== certUrlFor(livemode) || body.auth_algo !== authAlgo) {
      return failure;
    }
    // The bytes PayPal signed are the bytes it sent; the event handed back must be those bytes, parsed.
    const sent = outbox.transmissions.get(transmissionId);
    const bytes = sent ? sent.body : JSON.stringify(body.webhook_event);
    if (sent && !isDeepStrictEqual(JSON.parse(sent.body), body.webhook_event)) return failure;
    const ok = verify(outbox.keys, signedString(transmissionId, time, webhookId, bytes), String(body.transmission_sig));
    return { status: 200, body: { verification_status: ok ? 'SUCCESS' : 'FAILURE' } };
  }

  /** The app's one webhook; another app's, the other mode's or an unknown id is PayPal's INVALID_RESOURCE_ID. */
  function showWebhook(account: Account, id: string): Reply {
    const webhook = id === account.webhookId ? webhookJson(account, modeBase(origin, account.livemode)) : undefined;
    if (!webhook) return { status: 404, body: webhooksErrorBody('INVALID_RESOURCE_ID', 'Resource id is invalid.') };
    return { status: 200, body: webhook };
  }

  function route(req: http.IncomingMessage, livemode: boolean, method: string, path: string, body: unknown): Reply {
    if (method === 'POST' && path === '/v1/oauth2/token') return issueToken(req, livemode);
    const account = bearer(req, livemode);
    if (!account) {
      return path.startsWith('/v1/notifications')
        ? {
            status: 401,
            body: webhooksErrorBody(
              'AUTHENTICATION_FAILURE',
              'Authentication failed due to invalid authentication credentials or a missing Authorization header.',
            ),
          }
        : { status: 401, body: errorBody(401) };
    }
    const requestId = header(req, 'paypal-request-id');
    const full = header(req, 'prefer') === 'return=representation';
    const input = isRecord(body) ? body : {};
    let m: RegExpExecArray | null;
    if (method === 'POST' && path === '/v2/checkout/orders') return createOrder(account, input, requestId, full);
    if (method === 'GET' && (m = /^\/v2\/checkout\/orders\/([^/]+)$/.exec(path))) {
      const order = ownOrder(account, decodeURIComponent(m[1]!));
      if (!order) return notFound();
      const made = order.captureId ? captures.get(order.captureId) : undefined;
      return { status: 200, body: orderJson(order, modeBase(origin, livemode), made) };
    }
    if (method === 'POST' && (m = /^\/v2\/checkout\/orders\/([^/]+)\/capture$/.exec(path))) {
      return captureOrder(account, decodeURIComponent(m[1]!), requestId);
    }
    if (method === 'POST' && (m = /^\/v2\/payments\/captures\/([^/]+)\/refund$/.exec(path))) {
      return refundCapture(account, decodeURIComponent(m[1]!), input, requestId);
    }
    if (method === 'POST' && path === '/v1/notifications/verify-webhook-signature') {
      return verifySignature(account, livemode, input);
    }
    if (method === 'GET' && (m = /^\/v1\/notifications\/webhooks\/([^/]+)$/.exec(path))) {
      return showWebhook(account, decodeURIComponent(m[1]!));
    }
    return notFound();
  }

  function badRequest(path: string, problems: string[]): Reply {
    if (path === '/v1/oauth2/token') {
      return { status: 400, body: { error: 'unsupported_grant_type', error_description: 'Grant Type is NULL' } };
    }
    // INVALID_PARAMETER_SYNTAX is the one issue every kept operation's 400 lists; `field` says what broke.
    const schema = path.startsWith('/v2/payments')
      ? 'payments__captures.refund-400'
      : path.endsWith('/capture')
        ? 'orders__orders.capture-400'
        : 'orders__400';
    const details = problems
      .slice(0, 3)
      .map((p) => issueDetail(document, schema, 'INVALID_PARAMETER_SYNTAX', { field: p, location: 'body' }));
    if (path.startsWith('/v1/notifications')) {
      return { status: 400, body: webhooksErrorBody('VALIDATION_ERROR', 'Invalid request - see details', details) };
    }
    return { status: 400, body: errorBody(400, details) };
  }

  function playFault(fault: FakeFault, res: http.ServerResponse): void {
    switch (fault) {
      case 'timeout':
        hanging.add(res); // never answered; closed with the server
        return;
      case 'server-error':
        send(res, 500, errorBody(500));
        return;
      case 'rate-limited':
        send(res, 429, rateLimitedBody(), { 'Retry-After': '7' });
        return;
      case 'garbage':
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('<html>upstream gateway says hi</html>');
        return;
    }
  }

  function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'Content-Type': 'application/json',
      'Paypal-Debug-Id': randomBytes(6).toString('hex'),
      ...headers,
    });
    res.end(text);
  }

  // ---- the buyer's pages -----------------------------------------------------------------------------------------

  function page(res: http.ServerResponse, status: number, html: string): void {
    res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(html);
  }

  function redirect(res: http.ServerResponse, url: string): void {
    res.writeHead(303, { Location: url });
    res.end();
  }

  function buyer(
    livemode: boolean,
    method: string,
    path: string,
    url: URL,
    raw: string,
    res: http.ServerResponse,
  ): boolean {
    const base = modeBase(origin, livemode);
    const find = (token: string | null): OrderRecord | undefined => {
      const order = token === null ? undefined : orders.get(token);
      return order?.account.livemode === livemode ? order : undefined;
    };
    if (method === 'GET' && path === '/checkoutnow') {
      const order = find(url.searchParams.get('token'));
      if (!order) page(res, 404, notFoundPage());
      else page(res, 200, approvalPage(order, base));
      return true;
    }
    if (method === 'POST' && (path === '/checkoutnow/approve' || path === '/checkoutnow/decline')) {
      const order = find(new URLSearchParams(raw).get('token'));
      if (!order) page(res, 404, notFoundPage());
      else if (!approvable(order)) page(res, 409, approvalPage(order, base));
      else if (path === '/checkoutnow/approve') {
        approve(order, {});
        const target = order.returnUrl ? new URL(order.returnUrl) : undefined;
        if (!target) page(res, 200, '<!doctype html><p>Approved.</p>');
        else {
          target.searchParams.set('token', order.id);
          target.searchParams.set('PayerID', order.payerId!);
          redirect(res, target.toString());
        }
      } else {
        approve(order, { decline: true });
        if (order.cancelUrl) redirect(res, order.cancelUrl);
        else page(res, 200, '<!doctype html><p>Payment not completed.</p>');
      }
      return true;
    }
    if (method === 'GET' && path === `/v1/notifications/certs/${outbox.certName}`) {
      res.writeHead(200, { 'Content-Type': 'application/x-pem-file' });
      res.end(outbox.keys.publicKey.export({ type: 'spki', format: 'pem' }));
      return true;
    }
    return false;
  }

  // ---- the server ------------------------------------------------------------------------------------------------

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', origin);
    const mode = /^\/(live|sandbox)(\/.*)$/.exec(url.pathname);
    if (!mode) {
      page(res, 404, notFoundPage());
      return;
    }
    const livemode = mode[1] === 'live';
    const path = mode[2]!;
    const method = (req.method ?? 'GET').toUpperCase();
    if (buyer(livemode, method, path, url, raw, res)) return;

    requests.push({ method, path, idempotencyKey: header(req, 'paypal-request-id') });
    let body: unknown = undefined;
    const problems: string[] = [];
    if (raw.length > 0) {
      if ((header(req, 'content-type') ?? '').includes('application/x-www-form-urlencoded')) {
        body = Object.fromEntries(new URLSearchParams(raw));
      } else {
        try {
          body = JSON.parse(raw) as unknown;
        } catch {
          problems.push(`${method} ${path}: request body is not JSON`);
        }
      }
    }
    problems.push(...check.request(method, path, { query: Object.fromEntries(url.searchParams), body }));
    violations.push(...problems.map((p) => `request: ${p}`));

    const atPath = pathFaults.findIndex((f) => f.path === path);
    const fault = atPath >= 0 ? pathFaults.splice(atPath, 1)[0]!.fault : faults.shift();
    if (fault) {
      playFault(fault, res);
      return;
    }
    const reply = problems.length > 0 ? badRequest(path, problems) : route(req, livemode, method, path, body);
    for (const v of check.response(method, path, reply.status, reply.body)) violations.push(`response: ${v}`);
    send(res, reply.status, reply.body, reply.headers);
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      violations.push(
        `fake failed on ${req.method} ${req.url}: ${error instanceof Error ? error.stack : String(error)}`,
      );
      if (!res.headersSent) send(res, 500, errorBody(500));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // ---- what the tests drive --------------------------------------------------------------------------------------

  function sessionOrder(sessionId: string): OrderRecord {
    const order = orders.get(sessionId);
    if (!order) throw new Error(`no PayPal order ${sessionId}`);
    return order;
  }

  function accountOf(credentials: Record<string, string>): Account {
    const values = new Set(Object.values(credentials));
    const account = accounts.find((a) => values.has(a.clientId) || values.has(a.webhookId));
    if (!account) throw new Error('no PayPal account with these credentials');
    return account;
  }

  function fakeSession(order: OrderRecord): FakeSession {
    const made = order.captureId ? captures.get(order.captureId) : undefined;
    const state =
      order.status === 'APPROVED'
        ? 'approved'
        : order.status === 'VOIDED'
          ? 'expired'
          : order.status === 'COMPLETED'
            ? made?.status === 'DECLINED'
              ? 'failed'
              : 'paid'
            : 'open';
    return {
      sessionId: order.id,
      attemptId: order.customId,
      amount: order.amount.value,
      currency: order.amount.currency_code,
      state,
      paymentRef: made && made.status !== 'DECLINED' ? made.id : undefined,
      livemode: order.account.livemode,
    };
  }

  const liveBaseUrl = modeBase(origin, true);
  const sandboxBaseUrl = modeBase(origin, false);

  const fake: PayPalFake = {
    baseUrl: liveBaseUrl,
    liveBaseUrl,
    sandboxBaseUrl,
    gatewayBaseUrls: `PAYPAL=${liveBaseUrl},PAYPAL_SANDBOX=${sandboxBaseUrl}`,
    violations,
    requests,
    apiBase: (livemode) => modeBase(origin, livemode),

    createAccount({ livemode, webhookUrl }) {
      const account: Account = {
        livemode,
        clientId: `A${randomBytes(59).toString('base64url')}`,
        clientSecret: `E${randomBytes(59).toString('base64url')}`,
        webhookId: paypalId(),
        merchantId: accountId(),
        webhookUrl,
      };
      accounts.push(account);
      return {
        PAYPAL_CLIENT_ID: account.clientId,
        PAYPAL_CLIENT_SECRET: account.clientSecret,
        PAYPAL_WEBHOOK_ID: account.webhookId,
      };
    },
    setWebhookUrl(credentials, url) {
      accountOf(credentials).webhookUrl = url;
    },
    failNext(fault, count = 1) {
      for (let i = 0; i < count; i++) faults.push(fault);
    },
    failAt(path, fault) {
      pathFaults.push({ path, fault });
    },
    async pay(sessionId, options = {}) {
      const order = sessionOrder(sessionId);
      const captureAmount =
        options.amount === undefined
          ? undefined
          : { currency_code: options.currency ?? order.amount.currency_code, value: options.amount };
      approve(order, { captureAmount, webhooks: options.webhooks ?? true });
      await outbox.settled();
    },
    async fail(sessionId, options = {}) {
      approve(sessionOrder(sessionId), { decline: true, webhooks: options.webhooks ?? true });
      await outbox.settled();
    },
    async expire(sessionId) {
      // PayPal voids an order left unapproved or uncaptured; it documents no webhook for that.
      const order = sessionOrder(sessionId);
      if (order.status === 'COMPLETED') throw new Error(`order ${sessionId} is captured: it cannot expire`);
      order.status = 'VOIDED';
      order.updateTime = now();
      await Promise.resolve();
    },
    async captureAsMerchant(sessionId, options = {}) {
      const order = sessionOrder(sessionId);
      if (order.status !== 'APPROVED') throw new Error(`order ${sessionId} is ${order.status}, not APPROVED`);
      capture(order, options.webhooks ?? true);
      await outbox.settled();
    },
    session: (sessionId) => {
      const order = orders.get(sessionId);
      return order ? fakeSession(order) : undefined;
    },
    sessions: () => [...orders.values()].map(fakeSession),
    refunds(paymentRef) {
      return refunds
        .filter((r) => paymentRef === undefined || r.capture.id === paymentRef)
        .map((r): FakeRefund => ({
          providerRefundId: r.id,
          paymentRef: r.capture.id,
          amount: r.amount.value,
          currency: r.amount.currency_code,
          idempotencyKey: r.requestId,
        }));
    },
    async dashboardRefund(paymentRef, amount) {
      const made = captures.get(paymentRef);
      if (!made) throw new Error(`no capture ${paymentRef}`);
      const result = refund(made, { currency_code: made.amount.currency_code, value: amount }, undefined, undefined);
      if (!('id' in result)) throw new Error(`PayPal would refuse this refund: ${result.issue}`);
      await outbox.settled();
    },
    async openDispute(paymentRef, options = {}) {
      const made = captures.get(paymentRef);
      if (!made) throw new Error(`no capture ${paymentRef}`);
      const reason = options.reason ?? 'MERCHANDISE_OR_SERVICE_NOT_RECEIVED';
      if (!disputeReasons.includes(reason)) throw new Error(`PayPal has no dispute reason ${reason}`);
      const at = now();
      const dispute: DisputeRecord = {
        id: `PP-D-${Math.floor(10000 + Math.random() * 89999)}`,
        capture: made,
        reason,
        status: 'WAITING_FOR_SELLER_RESPONSE',
        outcome: undefined,
        createTime: at,
        updateTime: at,
        sellerResponseDue: new Date(Date.now() + 10 * 86400_000).toISOString(),
      };
      disputes.set(dispute.id, dispute);
      const account = made.order.account;
      emit(
        account,
        'CUSTOMER.DISPUTE.CREATED',
        'dispute',
        disputeJson(dispute, modeBase(origin, account.livemode)),
        `A new dispute opened with Case # ${dispute.id}`,
        true,
      );
      await outbox.settled();
      return dispute.id;
    },
    async closeDispute(disputeId, outcome) {
      const dispute = disputes.get(disputeId);
      if (!dispute) throw new Error(`no dispute ${disputeId}`);
      dispute.status = 'RESOLVED';
      dispute.outcome = outcome === 'won' ? 'RESOLVED_SELLER_FAVOUR' : 'RESOLVED_BUYER_FAVOUR';
      dispute.updateTime = now();
      const account = dispute.capture.order.account;
      emit(
        account,
        'CUSTOMER.DISPUTE.RESOLVED',
        'dispute',
        disputeJson(dispute, modeBase(origin, account.livemode)),
        `A dispute was resolved with case # ${dispute.id}`,
        true,
      );
      await outbox.settled();
    },
    webhooks: (): FakeWebhook[] => outbox.all(),
    resend: (eventId, options = {}) => outbox.resend(eventId, options.tamper),
    holdWebhooks: (hold) => outbox.hold(hold),
    settled: () => outbox.settled(),
    accessTokens: () => [...tokens.keys()],
    async close() {
      for (const res of hanging) res.destroy();
      hanging.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
    },
  };
  return fake;
}

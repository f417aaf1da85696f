// Sends the dynamic-delivery outbox (src/domain/orders/dynamic-delivery.ts). One round: claim due requests (SKIP LOCKED,
// with a lease), send each outside any transaction, then record the answer in one transaction, only if this worker
// still holds the lease. The answer decides the line item: `{ "status": "pending" }` leaves it AWAITING_FULFILLMENT
// (the merchant fulfils it later through POST /orders/{id}/items/{itemId}/fulfill); content (`message`, `codes`,
// `links`) delivers it; anything else (another status, a time-out, a refused target, an unusable body) is retried on
// the webhook schedule, and after the last attempt the item is FAILED.
import type { Kysely, Transaction } from 'kysely';
import type { Database, DeliveryStatus, ItemDeliveryStatus } from '../../db/tables';
import {
  claimDueDynamicDeliveries,
  orderIdOfItem,
  orderItemForUpdate,
  type ClaimedDynamicDelivery,
} from '../../db/queries/dynamic-deliveries';
import { settleLeasedRow } from '../../db/queries/leased-queue';
import { orderByIdForUpdate, updateOrderItem } from '../../db/queries/orders';
import { shopById } from '../../db/queries/shops';
import { shopDynamicSecret } from '../domain/orders/dynamic-delivery';
import { mailDraft } from '../mail/templates';
import { emitEvent } from '../domain/effects';
import { queueMail } from '../mail/queue';
import { sendOutbound, type OutboundOutcome } from '../platform/outbound-http';
import type { Clock } from '../platform/clock';
import type { SecretBox } from '../platform/secret-box';
import { signatureHeader } from '../platform/webhook-signature';
import { leasedQueueJob, type LeasedQueueOptions } from './leased-queue';
import { failureText, MAX_ATTEMPTS, retryDelayMs } from './webhook-delivery';
import type { Job } from './worker';

export interface DynamicDeliveryOptions extends LeasedQueueOptions {
  secrets: SecretBox;
  allowPrivateTargets: boolean;
  /** Total time an attempt may take (default 10 s). */
  timeoutMs?: number;
  random?: () => number;
}

/** What a 2xx answer delivers: the content keys of FulfillOrderItemRequest (files excepted). */
export interface DynamicContent {
  message?: string;
  codes?: string[];
  links?: { url: string; label: string }[];
}

export type DynamicAnswer =
  { kind: 'pending' } | { kind: 'content'; content: DynamicContent } | { kind: 'unusable'; reason: string };

/** An answer of up to 1000 codes of 1000 characters fits; a longer one is cut off, unusable, and retried. */
const MAX_ANSWER_BYTES = 1024 * 1024;
const ERROR_CHARS = 1000;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isHttpUrl(s: string): boolean {
  try {
    const { protocol } = new URL(s);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

function checkLink(link: unknown): string | null {
  if (!isRecord(link)) return 'each link is an object { url, label }';
  if (Object.keys(link).some((k) => k !== 'url' && k !== 'label')) return 'a link has only url and label';
  const { url, label } = link;
  if (typeof url !== 'string' || url.length > 2048 || !/^https?:\/\//i.test(url) || !isHttpUrl(url))
    return 'a link url is an http(s) URL of at most 2048 characters';
  if (typeof label !== 'string' || label.length < 1 || label.length > 200) return 'a link label is 1-200 characters';
  return null;
}

/** Reads a 2xx answer's body: the same limits as FulfillOrderItemRequest's content keys. */
export function parseDynamicAnswer(body: string): DynamicAnswer {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { kind: 'unusable', reason: 'the answer is not JSON' };
  }
  if (!isRecord(json)) return { kind: 'unusable', reason: 'the answer is not a JSON object' };
  if (Object.keys(json).length === 1 && json.status === 'pending') return { kind: 'pending' };
  const unknownKey = Object.keys(json).find((k) => k !== 'message' && k !== 'codes' && k !== 'links');
  if (unknownKey !== undefined) return { kind: 'unusable', reason: `unknown key "${unknownKey}"` };
  const { message, codes, links } = json;
  if (message === undefined && codes === undefined && links === undefined)
    return { kind: 'unusable', reason: 'send { "status": "pending" } or at least one of message, codes, links' };
  if (message !== undefined && (typeof message !== 'string' || message.length < 1 || message.length > 10_000))
    return { kind: 'unusable', reason: 'message is a string of 1-10000 characters' };
  if (
    codes !== undefined &&
    (!Array.isArray(codes) ||
      codes.length < 1 ||
      codes.length > 1000 ||
      codes.some((c) => typeof c !== 'string' || c.length < 1 || c.length > 1000))
  )
    return { kind: 'unusable', reason: 'codes is an array of 1-1000 strings of 1-1000 characters' };
  if (links !== undefined) {
    if (!Array.isArray(links) || links.length < 1 || links.length > 100)
      return { kind: 'unusable', reason: 'links is an array of 1-100 links' };
    const wrong = links.map(checkLink).find((r) => r !== null);
    if (wrong) return { kind: 'unusable', reason: wrong };
  }
  const content: DynamicContent = {};
  if (message !== undefined) content.message = message as string;
  if (codes !== undefined) content.codes = codes as string[];
  if (links !== undefined)
    content.links = (links as { url: string; label: string }[]).map((l) => ({ url: l.url, label: l.label }));
  return { kind: 'content', content };
}

/** The lines of the delivery mail for one item's content. */
function mailLines(content: DynamicContent): string[] {
  return [
    ...(content.message !== undefined ? [content.message] : []),
    ...(content.codes ?? []),
    ...(content.links ?? []).map((l) => `${l.label}: ${l.url}`),
  ];
}

/** How an attempt ended, for the row: what the item becomes, or why it is tried again. */
type Verdict = { kind: 'pending' } | { kind: 'content'; content: DynamicContent } | { kind: 'failed'; error: string };

function verdictOf(outcome: OutboundOutcome): Verdict {
  const failure = failureText(outcome);
  if (failure !== null) return { kind: 'failed', error: failure };
  if (outcome.kind !== 'response') return { kind: 'failed', error: 'no answer' };
  if (outcome.status < 200 || outcome.status >= 300)
    return { kind: 'failed', error: `status ${outcome.status}: ${outcome.body}`.slice(0, ERROR_CHARS) };
  const answer = parseDynamicAnswer(outcome.body);
  if (answer.kind === 'unusable')
    return { kind: 'failed', error: `unusable answer (${outcome.status}): ${answer.reason}`.slice(0, ERROR_CHARS) };
  return answer;
}

export function dynamicDeliveryJob(db: Kysely<Database>, options: DynamicDeliveryOptions): Job {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const random = options.random ?? Math.random;

  async function send(claim: ClaimedDynamicDelivery, clock: Clock): Promise<Verdict> {
    const sentAt = clock.now();
    const secret = await shopDynamicSecret(db, options.secrets, claim.shop_id, sentAt);
    // The signature's time is real time (the job's clock), never a test shop's clock: receivers refuse a timestamp
    // minutes away from theirs.
    const timestamp = Math.floor(options.clock.now().getTime() / 1000);
    const outcome = await sendOutbound(
      {
        url: claim.url,
        headers: {
          'webhook-id': claim.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader([secret], claim.id, timestamp, claim.body),
        },
        body: claim.body,
      },
      { allowPrivateTargets: options.allowPrivateTargets, timeoutMs, maxBodyBytes: MAX_ANSWER_BYTES },
    );
    return verdictOf(outcome);
  }

  async function record(
    trx: Transaction<Database>,
    claim: ClaimedDynamicDelivery,
    attemptsBefore: number,
    verdict: Verdict,
    clock: Clock,
  ): Promise<void> {
    const now = clock.now();
    const shopId = claim.shop_id;
    const attemptsMade = attemptsBefore + 1;
    const delay = verdict.kind === 'failed' ? retryDelayMs(attemptsMade, random) : undefined;
    const status: DeliveryStatus =
      verdict.kind !== 'failed' ? 'SUCCEEDED' : delay === undefined ? 'FAILED' : 'RETRYING';
    const nextAt = delay === undefined ? null : new Date(now.getTime() + delay);
    await settleLeasedRow(trx, 'dynamic_deliveries', shopId, claim.id, {
      status,
      attempts: attemptsMade,
      next_attempt_at: nextAt,
      last_error: verdict.kind === 'failed' ? verdict.error : null,
      updated_at: now,
    });
    if (status === 'RETRYING') return;

    // The order's lock first, as every change of an order takes it; then the item.
    const orderId = await orderIdOfItem(trx, shopId, claim.order_item_id);
    const order = orderId ? await orderByIdForUpdate(trx, shopId, orderId) : undefined;
    const item = await orderItemForUpdate(trx, shopId, claim.order_item_id);
    // The merchant may have fulfilled (or otherwise settled) the item meanwhile: that decision stands.
    if (!order || !item || item.delivery_status !== 'PENDING') return;

    if (verdict.kind === 'pending' || verdict.kind === 'failed') {
      const next: ItemDeliveryStatus = verdict.kind === 'pending' ? 'AWAITING_FULFILLMENT' : 'FAILED';
      await updateOrderItem(trx, shopId, item.id, { delivery_status: next });
      return;
    }
    const delivered = await updateOrderItem(trx, shopId, item.id, {
      delivery_status: 'DELIVERED',
      delivered_at: now,
      delivered_items: JSON.stringify(verdict.content),
    });
    await emitEvent(
      trx,
      shopId,
      'order:item_delivered',
      {
        uniqid: order.uniqid,
        fulfillment: {
          line_item_id: delivered.id,
          delivery_status: delivered.delivery_status,
          delivered_at: now.toISOString(),
          delivered_items: verdict.content,
        },
      },
      { clock },
    );
    if (order.customer_email) {
      const shop = await shopById(trx, shopId);
      await queueMail(
        trx,
        shopId,
        mailDraft(order.customer_email, 'delivery', {
          shopName: shop?.name ?? '',
          uniqid: order.uniqid,
          items: [{ title: item.product_title, content: mailLines(verdict.content) }],
        }),
        now,
      );
    }
  }

  return leasedQueueJob(db, options, {
    name: 'dynamic-delivery',
    table: 'dynamic_deliveries',
    maxAttempts: MAX_ATTEMPTS,
    noun: 'dynamic delivery',
    idField: 'delivery_id',
    claim: claimDueDynamicDeliveries,
    send,
    record,
  });
}

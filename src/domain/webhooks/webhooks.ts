// Webhook endpoints and their deliveries: registering, changing and removing an endpoint, rotating its secret,
// test events and manual retries, and the lists that show them (endpoints, delivery log, events).
import { isIP } from 'node:net';
import type { DeliveryStatus, WebhookEndpointRow } from '../../../db/tables';
import type { ReadDb } from '../../../db/queries/shop-scope';
import * as endpoints from '../../../db/queries/webhook-endpoints';
import * as deliveries from '../../../db/queries/webhook-deliveries';
import * as events from '../../../db/queries/events';
import { fullAccessScope } from '../../auth/scopes';
import { NotFoundError, ValidationError } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import { queuedAttempt } from '../../platform/events';
import { emitEvent } from '../effects';
import type { ListSpec } from '../../platform/list-query';
import { isPublicAddress } from '../../platform/outbound-http';
import { endpointSecretContext, type SecretBox } from '../../platform/secret-box';
import type { ShopWrite } from '../../platform/unit-of-work';
import { newWebhookSecret } from '../../platform/webhook-signature';
import { eventView, webhookAttemptView, webhookEndpointView } from '../../views/webhook';

/** The event names of the contract's WebhookEventType (test/webhooks/webhook-platform.test.ts keeps them equal). */
export const webhookEventTypes = [
  'order:created',
  'order:paid',
  'order:completed',
  'order:refunded',
  'order:voided',
  'order:item_delivered',
  'payment:created',
  'payment:flagged',
  'subscription:created',
  'subscription:renewed',
  'subscription:paused',
  'subscription:cancelled',
  'dispute:opened',
  'dispute:closed',
  'license:created',
  'license:revoked',
  'review:created',
  'ticket:created',
  'customer:created',
  'product:stock_low',
  'reseller:invited',
  'reseller:suspended',
  'affiliate:approved',
  'webhook:test',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/**
 * The scope that reads the resource each event describes: an event is shown (GET /events, GET /events/{id}) only
 * to a credential that holds it besides `webhooks.read`, or `*`, so the events API opens nothing its scopes do not.
 * `null`: the event describes the webhook machinery itself (a test event), which `webhooks.read` already covers.
 * A Record over every event type: a new type does not compile until it is given its scope here.
 */
export const eventReadScopes: Readonly<Record<WebhookEventType, string | null>> = {
  'order:created': 'orders.read',
  'order:paid': 'orders.read',
  'order:completed': 'orders.read',
  'order:refunded': 'orders.read',
  'order:voided': 'orders.read',
  'order:item_delivered': 'orders.read',
  'payment:created': 'payments.read',
  // Money taken for an order or a payment: the invoice's reader sees it.
  'payment:flagged': 'orders.read',
  'subscription:created': 'subscriptions.read',
  'subscription:renewed': 'subscriptions.read',
  'subscription:paused': 'subscriptions.read',
  'subscription:cancelled': 'subscriptions.read',
  'dispute:opened': 'disputes.read',
  'dispute:closed': 'disputes.read',
  'license:created': 'licenses.read',
  'license:revoked': 'licenses.read',
  'review:created': 'reviews.read',
  'ticket:created': 'tickets.read',
  'customer:created': 'customers.read',
  'product:stock_low': 'products.read',
  'reseller:invited': 'resellers.read',
  'reseller:suspended': 'resellers.read',
  'affiliate:approved': 'affiliates.read',
  'webhook:test': null,
};

/** The event types these scopes may read; `undefined` for every type (full access). */
export function readableEventTypes(scopes: readonly string[]): WebhookEventType[] | undefined {
  if (scopes.includes(fullAccessScope)) return undefined;
  return webhookEventTypes.filter((type) => {
    const needed = eventReadScopes[type];
    return needed === null || scopes.includes(needed);
  });
}

export interface WebhookDeps {
  secrets: SecretBox;
  allowPrivateTargets: boolean;
}

export const webhookList: CursorList<endpoints.WebhookEndpointPageRow, ReturnType<typeof webhookEndpointView>> = {
  spec: {
    name: 'webhooks',
    filters: {},
    sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
    defaultSort: '-created_at',
  },
  page: endpoints.webhookEndpointsPage,
  view: (rows) => rows.map(webhookEndpointView),
};

export const eventListSpec: ListSpec = {
  name: 'events',
  filters: {
    type: { column: 'type', type: 'enum', values: webhookEventTypes, description: 'event name' },
    created_after: { column: 'created_at', type: 'timestamp', op: '>=', description: 'created at or after' },
    created_before: { column: 'created_at', type: 'timestamp', op: '<', description: 'created before' },
  },
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

/**
 * The events list as these scopes see it: only the types they may read, chosen in the query itself, so pages are
 * full, `has_more` is right and a cursor walks exactly the readable events. The cursor is bound to the list and
 * its filters, not to the scopes: it holds a position, and whoever follows it sees only what they may read.
 */
export function eventListFor(scopes: readonly string[]): CursorList<events.EventPageRow, ReturnType<typeof eventView>> {
  const types = readableEventTypes(scopes);
  return {
    spec: eventListSpec,
    page:
      types === undefined
        ? events.eventsPage
        : (db, shopId, keyset) => events.eventsPageOfTypes(db, shopId, keyset, types),
    view: (rows) => rows.map(eventView),
  };
}

/** One event; one these scopes may not read is not found, like a missing one (its existence is not told either). */
export async function getEvent(db: ReadDb, shopId: string, id: string, scopes: readonly string[]) {
  const row = await events.eventById(db, shopId, id);
  const types = readableEventTypes(scopes);
  if (!row || (types !== undefined && !(types as readonly string[]).includes(row.type)))
    throw new NotFoundError('EVENT_NOT_FOUND');
  return eventView(row);
}

/**
 * A target the server may call: http(s), no credentials in it, and, unless private targets are allowed, not an
 * address literal (or `localhost`) of a loopback, private or link-local network. Names are resolved, and their
 * addresses checked, at each delivery (src/platform/outbound-http.ts): DNS can change after registration.
 */
export function checkTargetUrl(raw: string, allowPrivateTargets: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ValidationError([{ field: 'url', message: 'is not a valid URL' }]);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ValidationError([{ field: 'url', message: 'must be an http or https URL' }]);
  }
  if (url.username || url.password) {
    throw new ValidationError([{ field: 'url', message: 'must not carry a user name or password' }]);
  }
  if (!allowPrivateTargets) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const privateLiteral = isIP(host) !== 0 && !isPublicAddress(host);
    if (privateLiteral || host === 'localhost' || host.endsWith('.localhost')) {
      throw new ValidationError([
        { field: 'url', message: 'must not point at a loopback, private or link-local address' },
      ]);
    }
  }
  return url.toString();
}

export interface WebhookInput {
  url?: string;
  events?: string[];
  description?: string | null;
  enabled?: boolean;
}

async function endpointForUpdate({ trx, shopId }: ShopWrite, id: string): Promise<WebhookEndpointRow> {
  const row = await endpoints.webhookEndpointForUpdate(trx, shopId, id);
  if (!row) throw new NotFoundError('WEBHOOK_NOT_FOUND');
  return row;
}

export async function createWebhook(
  w: ShopWrite,
  input: Required<Pick<WebhookInput, 'url' | 'events'>> & WebhookInput,
  deps: WebhookDeps,
) {
  const { trx, shopId, now } = w;
  const id = newId('whe');
  const secret = newWebhookSecret();
  const row = await endpoints.insertWebhookEndpoint(trx, shopId, {
    id,
    url: checkTargetUrl(input.url, deps.allowPrivateTargets),
    events: [...new Set(input.events)],
    description: input.description ?? null,
    enabled: input.enabled ?? true,
    secret: deps.secrets.seal(secret, endpointSecretContext(shopId, id)),
    previous_secret: null,
    previous_secret_expires_at: null,
    created_at: now,
    updated_at: now,
  });
  return { ...webhookEndpointView(row), secret };
}

export async function updateWebhook(w: ShopWrite, id: string, input: WebhookInput, deps: WebhookDeps) {
  const { trx, shopId, now } = w;
  await endpointForUpdate(w, id);
  const row = await endpoints.updateWebhookEndpoint(trx, shopId, id, {
    ...(input.url !== undefined && { url: checkTargetUrl(input.url, deps.allowPrivateTargets) }),
    ...(input.events !== undefined && { events: [...new Set(input.events)] }),
    ...(input.description !== undefined && { description: input.description }),
    ...(input.enabled !== undefined && { enabled: input.enabled }),
    updated_at: now,
  });
  return webhookEndpointView(row!);
}

export async function deleteWebhook(w: ShopWrite, id: string): Promise<void> {
  const { trx, shopId } = w;
  if (!(await endpoints.deleteWebhookEndpoint(trx, shopId, id))) throw new NotFoundError('WEBHOOK_NOT_FOUND');
}

/**
 * A new secret, shown once. The previous one stops signing at once, or after `expirePreviousInSeconds` (both sign
 * meanwhile), so a receiver can switch without refusing a delivery. Only the latest previous secret is kept.
 */
export async function rotateWebhookSecret(
  w: ShopWrite,
  id: string,
  expirePreviousInSeconds: number,
  deps: WebhookDeps,
) {
  const { trx, shopId, now } = w;
  const current = await endpointForUpdate(w, id);
  const secret = newWebhookSecret();
  const keepPrevious = expirePreviousInSeconds > 0;
  await endpoints.updateWebhookEndpoint(trx, shopId, id, {
    secret: deps.secrets.seal(secret, endpointSecretContext(shopId, id)),
    previous_secret: keepPrevious ? current.secret : null,
    previous_secret_expires_at: keepPrevious ? new Date(now.getTime() + expirePreviousInSeconds * 1000) : null,
    updated_at: now,
  });
  return {
    secret,
    message: keepPrevious
      ? `The secret was rotated. The previous secret also signs deliveries for ${expirePreviousInSeconds} more seconds.`
      : 'The secret was rotated. The previous secret no longer signs deliveries.',
  };
}

/** Queues a `webhook:test` event to this endpoint only; answers its PENDING log entry. */
export async function testWebhook(w: ShopWrite, id: string) {
  const { trx, shopId, clock } = w;
  const endpoint = await endpointForUpdate(w, id);
  if (!endpoint.enabled) {
    throw new ValidationError(
      [{ field: 'enabled', message: 'the endpoint is disabled' }],
      'This endpoint is disabled: enable it to send it a test event.',
    );
  }
  // Written now, not through w.effects at commit: the answer is the PENDING attempt, so its id is needed here.
  const { attemptIds } = await emitEvent(
    trx,
    shopId,
    'webhook:test',
    { webhook_id: endpoint.id, message: 'This is a test event.' },
    { clock, endpoint },
  );
  const attempt = await deliveries.attemptById(trx, shopId, attemptIds[0]!);
  return webhookAttemptView(attempt!);
}

/**
 * A new attempt of the logged delivery, now, with the same `webhook-id`. A settled delivery (SUCCEEDED or FAILED)
 * gets one more attempt (a failure settles it again, no new schedule); one with an attempt already queued has that
 * attempt brought forward to now, so a retry never sends the same event twice at once.
 */
export async function retryWebhookDelivery(w: ShopWrite, logId: string) {
  const { trx, shopId, now } = w;
  const logged = await deliveries.attemptById(trx, shopId, logId);
  if (!logged) throw new NotFoundError('WEBHOOK_LOG_NOT_FOUND');
  const delivery = await deliveries.deliveryForUpdate(trx, shopId, logged.delivery_id);
  if (!delivery) throw new NotFoundError('WEBHOOK_LOG_NOT_FOUND');
  if (delivery.pending_attempt_id) {
    const queued = await deliveries.updateAttempt(trx, shopId, delivery.pending_attempt_id, { next_retry_at: now });
    await deliveries.updateDelivery(trx, shopId, delivery.id, { next_attempt_at: now, updated_at: now });
    return webhookAttemptView(queued);
  }
  const attemptId = newId('whl');
  const endpoint = await endpoints.webhookEndpointById(trx, shopId, delivery.endpoint_id);
  const [attempt] = await deliveries.insertAttempts(trx, shopId, [
    queuedAttempt({
      id: attemptId,
      deliveryId: delivery.id,
      endpointId: delivery.endpoint_id,
      eventId: delivery.event_id,
      eventType: logged.event_type,
      url: endpoint!.url,
      attempt: delivery.attempts + 1,
      dueAt: now,
    }),
  ]);
  await deliveries.updateDelivery(trx, shopId, delivery.id, {
    status: 'PENDING',
    next_attempt_at: now,
    pending_attempt_id: attemptId,
    manual: true,
    lease_until: null,
    lease_token: null,
    updated_at: now,
  });
  return webhookAttemptView(attempt!);
}

export async function listWebhookLogs(
  db: ReadDb,
  shopId: string,
  query: { page?: number; per_page?: number; webhook_id?: string; status?: DeliveryStatus },
) {
  const page = query.page ?? 1;
  const perPage = query.per_page ?? 25;
  const { rows, total } = await deliveries.attemptsPage(
    db,
    shopId,
    { endpointId: query.webhook_id, status: query.status },
    { limit: perPage, offset: (page - 1) * perPage },
  );
  return { items: rows.map(webhookAttemptView), total, page, per_page: perPage };
}

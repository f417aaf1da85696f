// Dynamic delivery: a DYNAMIC product's goods come from the merchant's own server. When an order completes, each
// DYNAMIC line item gets one signed request to the product's `dynamic_webhook`; the completion pipeline only queues
// it (a dynamic_deliveries row, in its transaction, so a rolled-back completion sends nothing), and the worker
// (src/worker/dynamic-delivery.ts) sends it after commit. The item stays PENDING until the answer.
import type { Kysely } from 'kysely';
import type { Database, OrderItemRow } from '../../../db/tables';
import {
  dynamicDeliverySecret,
  ensureDynamicDeliverySecret,
  insertDynamicDelivery,
} from '../../../db/queries/dynamic-deliveries';
import { newId } from '../../ids';
import { eventBody } from '../../platform/events';
import type { SecretBox } from '../../platform/secret-box';
import type { ShopWrite } from '../../platform/unit-of-work';
import { newWebhookSecret } from '../../platform/webhook-signature';

/** The `event` of a dynamic-delivery request (openapi.yaml, webhooks: order:dynamic_delivery). */
export const DYNAMIC_DELIVERY_EVENT = 'order:dynamic_delivery';

export interface DynamicDeliveryInput {
  orderUniqid: string;
  orderId: string;
  item: OrderItemRow;
  url: string;
  customerEmail: string | null;
}

/** The request body (`DynamicDeliveryRequest` in openapi.yaml), fixed when queued so every retry sends the same. */
export function dynamicDeliveryBody(input: DynamicDeliveryInput): string {
  const { item } = input;
  return eventBody(
    DYNAMIC_DELIVERY_EVENT,
    JSON.stringify({
      uniqid: input.orderUniqid,
      line_item_id: item.id,
      product_id: item.product_id,
      variant_id: item.variant_id,
      product_title: item.product_title,
      variant_title: item.variant_title,
      quantity: item.quantity,
      customer_email: input.customerEmail,
      custom_fields: item.custom_fields ?? {},
      delivery_instructions: item.delivery_instructions,
    }),
  );
}

/** Queues the request of one DYNAMIC line item, due at once (`w.now`), inside the completing transaction. */
export async function queueDynamicDelivery(w: ShopWrite, input: DynamicDeliveryInput): Promise<void> {
  const { now } = w;
  await insertDynamicDelivery(w.trx, w.shopId, {
    id: newId('dyn'),
    order_item_id: input.item.id,
    url: input.url,
    body: dynamicDeliveryBody(input),
    status: 'PENDING',
    attempts: 0,
    next_attempt_at: now,
    created_at: now,
    updated_at: now,
  });
}

/** What a shop's dynamic-delivery secret is sealed with: it opens only on that shop's row. */
export function dynamicSecretContext(shopId: string): string {
  return `dynamic-delivery:${shopId}`;
}

/**
 * The shop's signing secret for dynamic deliveries (`whsec_…`), created on first use: the worker signs with it and
 * the merchant reads it with `npm run cli -- dynamic-secret <shopId>` to verify the requests.
 */
export async function shopDynamicSecret(
  db: Kysely<Database>,
  box: SecretBox,
  shopId: string,
  now: Date,
): Promise<string> {
  const context = dynamicSecretContext(shopId);
  const sealed =
    (await dynamicDeliverySecret(db, shopId)) ??
    (await ensureDynamicDeliverySecret(db, shopId, box.seal(newWebhookSecret(), context), now));
  return box.open(sealed, context);
}

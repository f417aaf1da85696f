// Delivering content for one line item by hand (POST /orders/{id}/items/{itemId}/fulfill): after a dynamic
// callback answered "pending", to correct or add to a delivery, from any delivery status. The order row is locked
// first, as every change of an order does, so this runs one after another with refunds and other deliveries of
// the same order.
//
// What a delivery stores: the item's delivered_items keeps what earlier deliveries (or the completion pipeline)
// put there, and each key sent now (message, codes, links, files) replaces that key; the answer and the event
// carry what this request delivered.
import type { OrderItemRow, OrderRow } from '../../../db/tables';
import * as attachments from '../../../db/queries/attachments';
import * as orders from '../../../db/queries/orders';
import { shopById } from '../../../db/queries/shops';
import { ApiError, NotFoundError, ValidationError, type ErrorDetail } from '../../errors';
import type { ShopWrite } from '../../platform/unit-of-work';
import { mailDraft } from '../../mail/templates';

export interface FulfillmentLink {
  url: string;
  label: string;
}

export interface FulfillmentFile {
  attachment_id: string;
}

/** The content of one delivery: the keys present are the ones sent. */
export interface DeliveredContent {
  message?: string;
  codes?: string[];
  links?: FulfillmentLink[];
  files?: FulfillmentFile[];
}

export interface FulfillItemInput extends DeliveredContent {
  notify_customer?: boolean;
}

export interface LineItemFulfillmentView {
  line_item_id: string;
  delivery_status: OrderItemRow['delivery_status'];
  delivered_at: string;
  delivered_items: DeliveredContent;
}

const contentKeys = ['message', 'codes', 'links', 'files'] as const;

/** Order statuses whose items may be delivered: the buyer paid, and not everything was given back. */
const deliverable: ReadonlySet<string> = new Set(['COMPLETED', 'PARTIALLY_REFUNDED']);

export async function fulfillOrderItem(
  w: ShopWrite,
  orderId: string,
  itemId: string,
  input: FulfillItemInput,
): Promise<LineItemFulfillmentView> {
  const { trx, shopId, effects, now } = w;
  const order = await orders.orderByIdForUpdate(trx, shopId, orderId);
  if (!order) throw new NotFoundError('INVOICE_NOT_FOUND');
  const item = (await orders.itemsOfOrders(trx, shopId, [order.id])).get(order.id)?.find((i) => i.id === itemId);
  if (!item) throw new NotFoundError('ORDER_ITEM_NOT_FOUND');
  if (!deliverable.has(order.status)) {
    throw new ApiError(
      'ORDER_NOT_COMPLETED',
      `The order is ${order.status}; line items can be delivered only on a COMPLETED or PARTIALLY_REFUNDED order.`,
    );
  }
  const content = checkedContent(input);
  const files = await attachments.attachmentsByIds(trx, shopId, [
    ...new Set((content.files ?? []).map((f) => f.attachment_id)),
  ]);
  const unknownFiles: ErrorDetail[] = (content.files ?? []).flatMap((f, i) =>
    files.has(f.attachment_id)
      ? []
      : [{ field: `files[${i}].attachment_id`, message: 'is not an attachment of this shop' }],
  );
  if (unknownFiles.length > 0) throw new ValidationError(unknownFiles);

  const stored = { ...(item.delivered_items ?? {}), ...content };
  await orders.updateOrderItem(trx, shopId, item.id, {
    delivery_status: 'DELIVERED',
    delivered_at: now,
    delivered_items: JSON.stringify(stored),
  });
  // The order's JSON shows its items' delivery: a client syncing by updated_at must see it changed.
  await orders.updateOrder(trx, shopId, order.id, { updated_at: now });

  const fulfillment: LineItemFulfillmentView = {
    line_item_id: item.id,
    delivery_status: 'DELIVERED',
    delivered_at: now.toISOString(),
    delivered_items: content,
  };
  effects.emit('order:item_delivered', { uniqid: order.uniqid, fulfillment });
  if (input.notify_customer !== false && order.customer_email) {
    await mailBuyer(w, order, item, content, files);
  }
  return fulfillment;
}

/**
 * The content fields sent, checked again here (the contract checks them too) so the domain never stores a link
 * a buyer's mail client would open as something other than a web page.
 */
function checkedContent(input: FulfillItemInput): DeliveredContent {
  const content: DeliveredContent = {};
  for (const key of contentKeys) if (input[key] !== undefined) (content as Record<string, unknown>)[key] = input[key];
  if (Object.keys(content).length === 0) {
    throw new ValidationError([{ field: 'body', message: 'send at least one of message, codes, links, files' }]);
  }
  const badLinks: ErrorDetail[] = (content.links ?? []).flatMap((link, i) =>
    isWebUrl(link.url) ? [] : [{ field: `links[${i}].url`, message: 'must be an http or https URL' }],
  );
  if (badLinks.length > 0) throw new ValidationError(badLinks);
  return content;
}

function isWebUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

async function mailBuyer(
  w: ShopWrite,
  order: OrderRow,
  item: OrderItemRow,
  content: DeliveredContent,
  files: Map<string, attachments.AttachmentMeta>,
): Promise<void> {
  const { trx, shopId, effects } = w;
  const shop = await shopById(trx, shopId);
  if (!shop) throw new Error(`order ${order.id} has no shop`);
  const lines = [
    ...(content.message === undefined ? [] : [content.message]),
    ...(content.codes ?? []),
    ...(content.links ?? []).map((l) => `${l.label}: ${l.url}`),
    ...(content.files ?? []).map((f) => `File: ${files.get(f.attachment_id)?.filename ?? f.attachment_id}`),
  ];
  const title = item.variant_title ? `${item.product_title} (${item.variant_title})` : item.product_title;
  effects.mail(
    mailDraft(order.customer_email!, 'delivery', {
      shopName: shop.name,
      uniqid: order.uniqid,
      items: [{ title, content: lines }],
    }),
  );
}

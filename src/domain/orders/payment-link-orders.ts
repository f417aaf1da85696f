// A buyer uses a payment link: the link's hosted page turns the visit into an invoice (an order of the link's product,
// or a payment of its amount) and sends the buyer to that invoice's checkout. A link sells only while it is enabled,
// not expired and not exhausted; each invoice takes one of its uses at creation (under the link's row lock, so two
// buyers can never both take the last one) and gives it back if it expires unpaid, as a coupon use does.
import { changePaymentLinkUses, paymentLinkByIdForUpdate } from '../../../db/queries/payment-links';
import { updateOrder } from '../../../db/queries/orders';
import { shopById } from '../../../db/queries/shops';
import type { OrderRow, PaymentLinkRow } from '../../../db/tables';
import { NotFoundError } from '../../errors';
import type { ShopWrite } from '../../platform/unit-of-work';
import { paymentUrls, paymentView } from '../../views/payment';
import { createOrder, type OrderDeps } from './create-order';
import { openPaymentInvoice } from '../payments/payments';

export type LinkUnavailable = 'disabled' | 'expired' | 'exhausted';

/** Why a link cannot sell right now, or null when it can. The page and the purchase ask this one function. */
export function linkUnavailability(link: PaymentLinkRow, now: Date): LinkUnavailable | null {
  if (!link.enabled) return 'disabled';
  if (link.expires_at !== null && link.expires_at.getTime() <= now.getTime()) return 'expired';
  if (link.max_uses !== null && link.uses >= link.max_uses) return 'exhausted';
  return null;
}

/** The refusal a buyer sees; a 410: the address was valid and will not work again (unless the merchant acts). */
export class PaymentLinkUnavailable extends Error {
  constructor(readonly reason: LinkUnavailable) {
    super(`payment link ${reason}`);
  }
}

/** The invoice a buyer (by email) opens through a link. Throws PaymentLinkUnavailable or the order's own refusals. */
export async function orderFromPaymentLink(
  w: ShopWrite,
  linkId: string,
  buyer: { email: string; ipAddress?: string },
  deps: OrderDeps,
): Promise<OrderRow> {
  const { trx, shopId, effects, now } = w;
  const link = await paymentLinkByIdForUpdate(trx, shopId, linkId);
  if (!link) throw new NotFoundError('PAYMENT_LINK_NOT_FOUND');
  const reason = linkUnavailability(link, now);
  if (reason) throw new PaymentLinkUnavailable(reason);

  let order: OrderRow;
  if (link.product_id !== null) {
    const created = await createOrder(
      w,
      {
        email: buyer.email,
        ...(buyer.ipAddress === undefined ? {} : { ip_address: buyer.ipAddress }),
        title: link.title,
        items: [
          {
            product_id: link.product_id,
            ...(link.variant_id === null ? {} : { variant_id: link.variant_id }),
            quantity: link.quantity,
          },
        ],
      },
      deps,
    );
    order = await updateOrder(trx, shopId, created.id, { payment_link_id: link.id });
  } else if (link.amount !== null) {
    const shop = await shopById(trx, shopId);
    if (!shop) throw new Error(`shop ${shopId} vanished`);
    order = await openPaymentInvoice(
      w,
      shop,
      {
        total: link.amount,
        currency: link.currency,
        title: link.title,
        email: buyer.email,
        ipAddress: buyer.ipAddress,
        paymentLinkId: link.id,
      },
      deps,
    );
    effects.emit('payment:created', paymentView(order, paymentUrls(deps.checkoutBaseUrl, order)));
  } else {
    // The product was deleted (the foreign key cleared it): the link has nothing left to sell.
    throw new PaymentLinkUnavailable('disabled');
  }
  await changePaymentLinkUses(trx, shopId, link.id, 1, now);
  return order;
}

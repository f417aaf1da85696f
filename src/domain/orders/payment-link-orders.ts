// A buyer uses a payment link: the link's hosted page turns the visit into an invoice (an order of the link's product,
// or a payment of its amount) and sends the buyer to that invoice's checkout. A link sells only while it is enabled,
// not expired and not exhausted; each invoice takes one of its uses at creation (under the link's row lock, so two
// buyers can never both take the last one) and gives it back if it expires unpaid, as a coupon use does.
import Decimal from 'decimal.js';
import { changePaymentLinkUses, paymentLinkByIdForUpdate, variantOfProduct } from '../../../db/queries/payment-links';
import { updateOrder } from '../../../db/queries/orders';
import { productById, variantsByProduct } from '../../../db/queries/products';
import type { ReadDb } from '../../../db/queries/shop-scope';
import { shopById } from '../../../db/queries/shops';
import type { OrderRow, PaymentLinkRow, Shop } from '../../../db/tables';
import { NotFoundError } from '../../errors';
import type { ShopWrite } from '../../platform/unit-of-work';
import { paymentUrls, paymentView } from '../../views/payment';
import { allExtrasOf, checkLineExtras, loadLineCatalog, pricingTerms } from '../catalog/line-extras';
import { priceOrder, type OrderTotals } from '../catalog/pricing';
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

/** A variant field the buyer of a product link chooses an option of, as the product defines it. */
export interface LinkChoice {
  name: string;
  /** In display order; each option's adjustment of the unit price (numeric text, may be negative). */
  options: { value: string; priceAdjustment: string }[];
}

/** What a product link sells, as its page shows it before the buyer has chosen anything. */
export interface LinkOffer {
  /** `Game Key (Gold)`: the product, and the link's variant when it names one. */
  title: string;
  quantity: number;
  /** The product's variants to choose from, when it has some and the link names none (POST /orders needs one). */
  variants: { id: string; title: string; price: string }[];
  choices: LinkChoice[];
  /**
   * The invoice's money as the order pricing will charge it (tax, quantity deals, required add-ons) with the
   * cheapest variant and option of every field: exactly the total when no choice changes the price, else the lowest one.
   */
  price: OrderTotals;
  /** True when some choice costs more than the cheapest: the total is a "from" price. */
  varies: boolean;
  tax: { rate: string; inclusive: boolean };
}

/**
 * A product link's offer, or undefined for an amount link (or one whose product is gone). The options a buyer
 * must choose are those POST /orders requires (a field without options is not offered yet), and the price is
 * the one createOrder would compute: the same extras check and pricing function, fed the cheapest choices.
 */
export async function paymentLinkOffer(
  db: ReadDb,
  link: PaymentLinkRow,
  shop: Pick<Shop, 'tax_rate' | 'tax_inclusive'>,
): Promise<LinkOffer | undefined> {
  if (link.product_id === null) return undefined;
  const [product, variant, variants, catalog] = await Promise.all([
    productById(db, link.shop_id, link.product_id),
    link.variant_id === null ? undefined : variantOfProduct(db, link.shop_id, link.product_id, link.variant_id),
    link.variant_id === null ? variantsByProduct(db, link.shop_id, [link.product_id]) : undefined,
    loadLineCatalog(db, link.shop_id, allExtrasOf([link.product_id])),
  ]);
  if (!product) return undefined;
  const offered = variants?.get(product.id) ?? [];
  const cheapestVariant = offered.reduce<(typeof offered)[number] | undefined>(
    (low, v) => (low === undefined || new Decimal(v.price).lt(low.price) ? v : low),
    undefined,
  );
  const fields = (catalog.fields.get(product.id) ?? []).filter((f) => f.options.length > 0);
  const cheapest = <T extends { price_adjustment: string }>(options: T[]): T =>
    options.reduce((low, o) => (new Decimal(o.price_adjustment).lt(low.price_adjustment) ? o : low));
  const extras = checkLineExtras(
    catalog,
    { options: Object.fromEntries(fields.map((f) => [f.field.name, cheapest(f.options).value])) },
    0,
    product,
  );
  const tax = { rate: shop.tax_rate, inclusive: shop.tax_inclusive };
  const price = priceOrder(
    [
      {
        productId: product.id,
        unitPrice: (variant ?? cheapestVariant)?.price ?? product.price,
        quantity: link.quantity,
        ...pricingTerms(extras),
      },
    ],
    product.currency,
    null,
    tax,
  );
  return {
    title: variant ? `${product.title} (${variant.title})` : product.title,
    quantity: link.quantity,
    variants: offered.map((v) => ({ id: v.id, title: v.title, price: v.price })),
    choices: fields.map(({ field, options }) => ({
      name: field.name,
      options: options.map((o) => ({ value: o.value, priceAdjustment: o.price_adjustment })),
    })),
    price,
    varies:
      offered.some((v) => !new Decimal(v.price).eq(cheapestVariant!.price)) ||
      fields.some((f) =>
        f.options.some((o) => !new Decimal(o.price_adjustment).eq(cheapest(f.options).price_adjustment)),
      ),
    tax,
  };
}

/**
 * The invoice a buyer (by email, with the variant they chose when the link names none, and the variant field
 * options they chose: field name -> option value) opens through a link. Throws PaymentLinkUnavailable or the
 * order's own refusals (a missing choice: the ValidationError of POST /orders, on `items[0].variant_id` or
 * `items[0].options.<field>`; a variant the product has not: VARIANT_NOT_FOUND).
 */
export async function orderFromPaymentLink(
  w: ShopWrite,
  linkId: string,
  buyer: { email: string; ipAddress?: string; variantId?: string; options?: Record<string, string> },
  deps: OrderDeps,
): Promise<OrderRow> {
  const { trx, shopId, effects, now } = w;
  const link = await paymentLinkByIdForUpdate(trx, shopId, linkId);
  if (!link) throw new NotFoundError('PAYMENT_LINK_NOT_FOUND');
  const reason = linkUnavailability(link, now);
  if (reason) throw new PaymentLinkUnavailable(reason);

  let order: OrderRow;
  if (link.product_id !== null) {
    // The link's variant when it names one: a buyer's choice cannot replace what the merchant fixed.
    const variantId = link.variant_id ?? buyer.variantId;
    const created = await createOrder(
      w,
      {
        email: buyer.email,
        ...(buyer.ipAddress === undefined ? {} : { ip_address: buyer.ipAddress }),
        title: link.title,
        items: [
          {
            product_id: link.product_id,
            ...(variantId === undefined ? {} : { variant_id: variantId }),
            ...(buyer.options === undefined ? {} : { options: buyer.options }),
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

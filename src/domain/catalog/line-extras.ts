// What a `POST /orders` item adds to its product from the catalog extras: the variant field options the buyer chose
// (`options`, field name -> option value), the add-ons they took (`addons`, ids), and the quantity deal tiers that
// may lower the line. Prices come from the catalog only; every refusal is a 422 on the item's field, thrown before
// anything is written. src/domain/orders/create-order.ts calls loadLineCatalog once per order and checkLineExtras per item.
import * as addons from '../../../db/queries/addons';
import * as deals from '../../../db/queries/quantity-deals';
import * as fields from '../../../db/queries/variant-fields';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type {
  AddonRow,
  ChosenAddonRecord,
  ChosenOptionRecord,
  ProductRow,
  VariantFieldOptionRow,
  VariantFieldRow,
} from '../../../db/tables';
import { ValidationError, type ErrorDetail } from '../../errors';
import type { LinePricing, QuantityTier } from './pricing';

export interface LineCatalog {
  fields: Map<string, { field: VariantFieldRow; options: VariantFieldOptionRow[] }[]>;
  addons: Map<string, AddonRow[]>;
  tiers: Map<string, QuantityTier[]>;
}

export interface ItemExtrasInput {
  options?: Record<string, string>;
  addons?: string[];
}

export interface LineExtras {
  options: { field: VariantFieldRow; option: VariantFieldOptionRow }[];
  addons: AddonRow[];
  tiers: QuantityTier[];
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Which products to read each kind of extra for (an order knows which of its products have any). */
export interface ExtrasWanted {
  fields: readonly string[];
  addons: readonly string[];
  tiers: readonly string[];
}

/** The same products for every kind of extra. */
export const allExtrasOf = (productIds: readonly string[]): ExtrasWanted => ({
  fields: productIds,
  addons: productIds,
  tiers: productIds,
});

/**
 * The variant fields (with options), enabled add-ons and enabled deals' tiers of these products: a query per kind
 * asked for, none for a kind no product has.
 */
export async function loadLineCatalog(trx: ReadDb, shopId: string, wanted: ExtrasWanted): Promise<LineCatalog> {
  const catalog: LineCatalog = { fields: new Map(), addons: new Map(), tiers: new Map() };
  const fieldRows = await fields.variantFieldsOfProducts(trx, shopId, wanted.fields);
  const optionRows = await fields.optionsOfVariantFields(
    trx,
    shopId,
    fieldRows.map((f) => f.id),
  );
  const optionsByField = new Map<string, VariantFieldOptionRow[]>();
  for (const o of optionRows) push(optionsByField, o.field_id, o);
  for (const f of fieldRows) push(catalog.fields, f.product_id, { field: f, options: optionsByField.get(f.id) ?? [] });
  for (const a of await addons.enabledAddonsOfProducts(trx, shopId, wanted.addons)) {
    const { product_id, ...addon } = a;
    push(catalog.addons, product_id, addon);
  }
  for (const t of await deals.enabledTiersOfProducts(trx, shopId, wanted.tiers))
    push(catalog.tiers, t.product_id, {
      dealId: t.deal_id,
      minQuantity: t.min_quantity,
      type: t.discount_type,
      value: t.discount_value,
    });
  return catalog;
}

const listed = (values: string[]) => (values.length <= 10 ? values : [...values.slice(0, 10), '…']).join(', ');

/**
 * The item's options and add-ons checked against its product: one existing option for every field that has options
 * (a field without options is not offered yet), no unknown field, only enabled add-ons offered with the product and
 * in its currency; required add-ons are taken whether sent or not. All problems of the item in one 422.
 */
export function checkLineExtras(
  catalog: LineCatalog,
  item: ItemExtrasInput,
  index: number,
  product: ProductRow,
): LineExtras {
  const problems: ErrorDetail[] = [];
  const at = `items[${index}]`;
  const productFields = catalog.fields.get(product.id) ?? [];
  const chosen = item.options ?? {};
  const options: LineExtras['options'] = [];
  for (const { field, options: offered } of productFields) {
    if (offered.length === 0) continue;
    const value = Object.hasOwn(chosen, field.name) ? chosen[field.name] : undefined;
    const path = `${at}.options.${field.name}`;
    if (value === undefined) {
      problems.push({ field: path, message: `is required: choose one of ${listed(offered.map((o) => o.value))}` });
      continue;
    }
    const option = offered.find((o) => o.value === value);
    if (!option) problems.push({ field: path, message: `must be one of ${listed(offered.map((o) => o.value))}` });
    else options.push({ field, option });
  }
  for (const name of Object.keys(chosen)) {
    const field = productFields.find((f) => f.field.name === name);
    if (!field)
      problems.push({
        field: `${at}.options.${name}`,
        message:
          productFields.length === 0
            ? 'is not a variant field of this product (it has none)'
            : `is not a variant field of this product (its fields: ${listed(productFields.map((f) => f.field.name))})`,
      });
    else if (field.options.length === 0)
      problems.push({ field: `${at}.options.${name}`, message: 'has no options to choose from yet' });
  }

  const offeredAddons = catalog.addons.get(product.id) ?? [];
  const taken: AddonRow[] = [];
  (item.addons ?? []).forEach((id, j) => {
    const addon = offeredAddons.find((a) => a.id === id);
    if (!addon) problems.push({ field: `${at}.addons[${j}]`, message: 'is not an add-on offered with this product' });
    else if (!taken.includes(addon)) taken.push(addon);
  });
  for (const addon of offeredAddons) if (addon.required && !taken.includes(addon)) taken.push(addon);
  for (const addon of taken)
    if (addon.currency !== product.currency)
      problems.push({
        field: `${at}.addons`,
        message: `the add-on ${addon.id} is priced in ${addon.currency}; the product in ${product.currency}`,
      });

  if (problems.length > 0) throw new ValidationError(problems);
  return {
    options,
    // In catalog order (oldest first), whatever order they were sent in: the item's record is stable.
    addons: offeredAddons.filter((a) => taken.includes(a)),
    tiers: catalog.tiers.get(product.id) ?? [],
  };
}

/** The pricing terms of the extras (order-pricing.ts's PricedLine fields). */
export function pricingTerms(extras: LineExtras) {
  return {
    optionAdjustments: extras.options.map((o) => o.option.price_adjustment),
    tiers: extras.tiers,
    addonPrices: extras.addons.map((a) => a.price),
  };
}

/** The order item's record of its extras, as bought (columns of order_items, JSON text where jsonb). */
export function extrasColumns(extras: LineExtras, priced: LinePricing) {
  const options: ChosenOptionRecord[] = extras.options.map(({ field, option }) => ({
    field_id: field.id,
    name: field.name,
    option_id: option.id,
    value: option.value,
    price_adjustment: option.price_adjustment,
  }));
  const taken: ChosenAddonRecord[] = extras.addons.map((a, i) => ({
    id: a.id,
    title: a.title,
    unit_price: a.price,
    total: priced.addonTotals[i]!,
  }));
  return {
    variant_options: options.length === 0 ? null : JSON.stringify(options),
    addons: taken.length === 0 ? null : JSON.stringify(taken),
    quantity_discount: priced.quantityDiscount,
    quantity_deal_id: priced.tier?.dealId ?? null,
  };
}

// The catalog extras of the fixture format (src/domain/fixtures.ts, docs/fixtures.md): variant fields with their
// options, quantity deals and add-ons, each naming products of the same file by title (as coupons do). The schema
// part, the rules across items, and the writer; fixtures.ts plugs the three in.
import Decimal from 'decimal.js';
import type { Transaction } from 'kysely';
import { insertAddon } from '../../db/queries/addons';
import {
  insertQuantityDeal,
  replaceQuantityDealProducts,
  replaceQuantityDealTiers,
} from '../../db/queries/quantity-deals';
import { insertVariantField, insertVariantFieldOptions } from '../../db/queries/variant-fields';
import type { Database } from '../../db/tables';
import { newId, newUniqid } from '../ids';
import { minorUnit } from '../platform/money';

const decimal = { type: 'string', pattern: '^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,8})?$' } as const;
const signedDecimal = { type: 'string', pattern: '^-?(0|[1-9][0-9]{0,6})(\\.[0-9]{1,8})?$' } as const;
const titles = { type: 'array', maxItems: 1000, uniqueItems: true, items: { type: 'string', minLength: 1 } } as const;

export const catalogExtrasFixtureSchema = {
  // Variant fields of a product of this file, with their options (a buyer must choose one of each field's options).
  variant_fields: {
    type: 'array',
    maxItems: 1000,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['product', 'name'],
      properties: {
        product: { type: 'string', minLength: 1 },
        name: { type: 'string', minLength: 1, maxLength: 100 },
        sort_order: { type: 'integer', minimum: 0, maximum: 10000 },
        options: {
          type: 'array',
          maxItems: 100,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['value'],
            properties: {
              value: { type: 'string', minLength: 1, maxLength: 100 },
              price_adjustment: signedDecimal,
              sort_order: { type: 'integer', minimum: 0, maximum: 10000 },
            },
          },
        },
      },
    },
  },
  // Quantity deals: tiers of minimum quantity -> discount, for the products of this file they name.
  quantity_deals: {
    type: 'array',
    maxItems: 1000,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['title', 'tiers'],
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 200 },
        enabled: { type: 'boolean' },
        products: titles,
        tiers: {
          type: 'array',
          minItems: 1,
          maxItems: 20,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['min_quantity', 'discount_type', 'discount_value'],
            properties: {
              min_quantity: { type: 'integer', minimum: 2, maximum: 2147483647 },
              discount_type: { enum: ['PERCENTAGE', 'FIXED'] },
              discount_value: decimal,
            },
          },
        },
      },
    },
  },
  // Add-ons offered with the products of this file they name, in those products' currency.
  addons: {
    type: 'array',
    maxItems: 1000,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['title', 'price'],
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 200 },
        description: { type: 'string', maxLength: 65535 },
        price: decimal,
        currency: { type: 'string', pattern: '^[A-Z]{3}$' },
        required: { type: 'boolean' },
        enabled: { type: 'boolean' },
        products: titles,
      },
    },
  },
} as const;

export interface VariantFieldFixture {
  /** Title of a product of the same file. */
  product: string;
  name: string;
  sort_order?: number;
  options?: { value: string; price_adjustment?: string; sort_order?: number }[];
}

export interface QuantityDealFixture {
  title: string;
  enabled?: boolean;
  /** Titles of products of the same file. */
  products?: string[];
  tiers: { min_quantity: number; discount_type: 'PERCENTAGE' | 'FIXED'; discount_value: string }[];
}

export interface AddonFixture {
  title: string;
  description?: string;
  price: string;
  /** Default: the shop's currency. Every product it is offered with must be priced in it. */
  currency?: string;
  required?: boolean;
  enabled?: boolean;
  /** Titles of products of the same file. */
  products?: string[];
}

export interface CatalogExtrasFixtures {
  variant_fields?: VariantFieldFixture[];
  quantity_deals?: QuantityDealFixture[];
  addons?: AddonFixture[];
}

interface ProductRef {
  title: string;
  currency?: string;
}

/** Rules across items the JSON Schema does not say; `products` are the file's products. */
export function catalogExtrasChecks(f: CatalogExtrasFixtures & { products?: ProductRef[] }): string[] {
  const problems: string[] = [];
  const count = new Map<string, number>();
  for (const p of f.products ?? []) count.set(p.title, (count.get(p.title) ?? 0) + 1);
  const titleProblem = (path: string, title: string) => {
    const n = count.get(title) ?? 0;
    if (n === 0) problems.push(`${path} names no product of this file`);
    else if (n > 1) problems.push(`${path} names a title several products of this file have`);
  };
  const names = new Set<string>();
  (f.variant_fields ?? []).forEach((v, i) => {
    titleProblem(`/variant_fields/${i}/product`, v.product);
    const key = `${v.product}\u0000${v.name.toLowerCase()}`;
    if (names.has(key)) problems.push(`/variant_fields/${i}/name is used twice on its product (ignoring case)`);
    names.add(key);
    const values = new Set<string>();
    (v.options ?? []).forEach((o, j) => {
      if (values.has(o.value.toLowerCase()))
        problems.push(`/variant_fields/${i}/options/${j}/value is used twice in its field (ignoring case)`);
      values.add(o.value.toLowerCase());
      if (o.price_adjustment !== undefined && new Decimal(o.price_adjustment).abs().gt(1000000))
        problems.push(`/variant_fields/${i}/options/${j}/price_adjustment must be between -1000000 and 1000000`);
    });
  });
  (f.quantity_deals ?? []).forEach((d, i) => {
    (d.products ?? []).forEach((title, j) => titleProblem(`/quantity_deals/${i}/products/${j}`, title));
    const minima = new Set<number>();
    d.tiers.forEach((t, j) => {
      if (minima.has(t.min_quantity)) problems.push(`/quantity_deals/${i}/tiers/${j}/min_quantity is used twice`);
      minima.add(t.min_quantity);
      const value = new Decimal(t.discount_value);
      if (value.lte(0)) problems.push(`/quantity_deals/${i}/tiers/${j}/discount_value must be greater than 0`);
      if (t.discount_type === 'PERCENTAGE' && value.gt(100))
        problems.push(`/quantity_deals/${i}/tiers/${j}/discount_value of a PERCENTAGE tier is at most 100`);
    });
  });
  (f.addons ?? []).forEach((a, i) => {
    (a.products ?? []).forEach((title, j) => titleProblem(`/addons/${i}/products/${j}`, title));
  });
  return problems;
}

export interface SeededCatalogExtras {
  variant_fields: string[];
  /** The deals' uniqids (what `PATCH /products/quantity-deals/{uniqid}` takes). */
  quantity_deals: string[];
  addons: string[];
}

/**
 * Writes the extras (in the caller's transaction). `products` maps each title of the file to its new product's id
 * and currency. Currency rules that need the shop's currency are checked here: `fail` throws the caller's error.
 */
export async function seedCatalogExtras(
  trx: Transaction<Database>,
  shop: { id: string; currency: string },
  fixtures: CatalogExtrasFixtures,
  products: ReadonlyMap<string, { id: string; currency: string }>,
  fail: (message: string) => Error,
): Promise<SeededCatalogExtras> {
  const created: SeededCatalogExtras = { variant_fields: [], quantity_deals: [], addons: [] };
  const product = (title: string) => products.get(title)!;
  const sortOrders = new Map<string, number>();
  for (const [i, v] of (fixtures.variant_fields ?? []).entries()) {
    const p = product(v.product);
    const last = sortOrders.get(p.id);
    const sort = v.sort_order ?? (last === undefined ? 0 : last + 1);
    sortOrders.set(p.id, Math.max(last ?? sort, sort));
    const field = await insertVariantField(trx, shop.id, {
      id: newId('vfd'),
      product_id: p.id,
      name: v.name,
      sort_order: sort,
    });
    let lastOption: number | undefined;
    const rows = (v.options ?? []).map((o, j) => {
      const adjustment = o.price_adjustment ?? '0';
      if (new Decimal(adjustment).decimalPlaces() > minorUnit(p.currency))
        throw fail(
          `/variant_fields/${i}/options/${j}/price_adjustment has more decimals than ${p.currency} (${minorUnit(p.currency)})`,
        );
      const optionSort = o.sort_order ?? (lastOption === undefined ? 0 : lastOption + 1);
      lastOption = Math.max(lastOption ?? optionSort, optionSort);
      return {
        id: newId('vfo'),
        field_id: field.id,
        value: o.value,
        price_adjustment: adjustment,
        sort_order: optionSort,
      };
    });
    await insertVariantFieldOptions(trx, shop.id, rows);
    created.variant_fields.push(field.id);
  }
  for (const d of fixtures.quantity_deals ?? []) {
    const deal = await insertQuantityDeal(trx, shop.id, {
      id: newId('qdl'),
      uniqid: newUniqid(),
      title: d.title,
      enabled: d.enabled ?? true,
    });
    await replaceQuantityDealProducts(
      trx,
      shop.id,
      deal.id,
      (d.products ?? []).map((title) => product(title).id),
    );
    await replaceQuantityDealTiers(trx, shop.id, deal.id, d.tiers);
    created.quantity_deals.push(deal.uniqid);
  }
  for (const [i, a] of (fixtures.addons ?? []).entries()) {
    const currency = a.currency ?? shop.currency;
    if (new Decimal(a.price).decimalPlaces() > minorUnit(currency))
      throw fail(`/addons/${i}/price has more decimals than ${currency} (${minorUnit(currency)})`);
    (a.products ?? []).forEach((title, j) => {
      if (product(title).currency !== currency)
        throw fail(`/addons/${i}/products/${j} is priced in ${product(title).currency}; the add-on in ${currency}`);
    });
    const addon = await insertAddon(
      trx,
      shop.id,
      {
        id: newId('add'),
        title: a.title,
        description: a.description ?? null,
        price: a.price,
        currency,
        required: a.required ?? false,
        enabled: a.enabled ?? true,
      },
      (a.products ?? []).map((title) => product(title).id),
    );
    created.addons.push(addon.id);
  }
  return created;
}

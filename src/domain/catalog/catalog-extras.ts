// The catalog extras a merchant configures and `POST /orders` obeys (src/domain/catalog/line-extras.ts): variant fields and
// their options, quantity deals, add-ons. Names unique per product and values unique per field are the database's
// unique indexes (migration 0009), answered 409 CONFLICT by src/http/database-errors.ts, so two concurrent requests
// cannot both add the same name.
import * as addons from '../../../db/queries/addons';
import { productById } from '../../../db/queries/products';
import * as deals from '../../../db/queries/quantity-deals';
import * as fields from '../../../db/queries/variant-fields';
import type { VariantFieldOptionRow } from '../../../db/tables';
import type { components } from '../../generated/api-types';
import { NotFoundError, ValidationError, type ErrorDetail } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import { parseAmount } from '../../platform/money';
import type { ShopWrite } from '../../platform/unit-of-work';
import type { ReadDb } from '../../../db/queries/shop-scope';
import {
  addonView,
  variantFieldOptionView,
  variantFieldView,
  type AddonView,
  type VariantFieldOptionView,
  type VariantFieldView,
} from '../../views/catalog-extras';

export type CreateVariantFieldInput = components['schemas']['CreateVariantFieldRequest'];
export type CreateVariantFieldOptionInput = components['schemas']['CreateVariantFieldOptionRequest'];
export type UpdateQuantityDealInput = components['schemas']['UpdateQuantityDealRequest'];

/** A price adjustment: within the contract's bounds, with at most the product currency's minor unit of decimals. */
function adjustment(value: number | undefined, field: string, currency: string): string {
  return value === undefined ? '0' : parseAmount(value, field, { currency, min: -1000000 });
}

/** The product's fields, each with its options, in display order. */
export async function listVariantFields(
  db: ReadDb,
  shopId: string,
  productId: string,
): Promise<{ fields: VariantFieldView[] }> {
  const product = await productById(db, shopId, productId);
  if (!product) throw new NotFoundError('PRODUCT_NOT_FOUND');
  const rows = await fields.variantFieldsOfProducts(db, shopId, [product.id]);
  const options = groupBy(
    await fields.optionsOfVariantFields(
      db,
      shopId,
      rows.map((f) => f.id),
    ),
    (o) => o.field_id,
  );
  return { fields: rows.map((f) => variantFieldView(f, options.get(f.id) ?? [])) };
}

/** Adds a field and its initial options to the product. */
export async function createVariantField(
  w: ShopWrite,
  productId: string,
  input: CreateVariantFieldInput,
): Promise<VariantFieldView> {
  const { trx, shopId, effects, now } = w;
  const product = await productById(trx, shopId, productId);
  if (!product) throw new NotFoundError('PRODUCT_NOT_FOUND');
  const options = (input.options ?? []).map((o, i) => ({
    ...o,
    adjustment: adjustment(o.price_adjustment, `options[${i}].price_adjustment`, product.currency),
  }));
  const last = await fields.lastFieldSortOrder(trx, shopId, product.id);
  const field = await fields.insertVariantField(trx, shopId, {
    id: newId('vfd'),
    product_id: product.id,
    name: input.name,
    sort_order: input.sort_order ?? (last === null ? 0 : last + 1),
    created_at: now,
    updated_at: now,
  });
  let lastOption: number | null = null;
  const rows = await fields.insertVariantFieldOptions(
    trx,
    shopId,
    options.map((o) => {
      const sort = o.sort_order ?? (lastOption === null ? 0 : lastOption + 1);
      lastOption = Math.max(lastOption ?? sort, sort);
      return {
        id: newId('vfo'),
        field_id: field.id,
        value: o.value,
        price_adjustment: o.adjustment,
        sort_order: sort,
        created_at: now,
      };
    }),
  );
  effects.audit({ action: 'variant_field.created', resourceType: 'product', resourceId: product.id });
  return variantFieldView(field, sortOptions(rows));
}

/** Adds an option to a field of the product (a field of another product is not found). */
export async function createVariantFieldOption(
  w: ShopWrite,
  productId: string,
  fieldId: string,
  input: CreateVariantFieldOptionInput,
): Promise<VariantFieldOptionView> {
  const { trx, shopId, effects, now } = w;
  const product = await productById(trx, shopId, productId);
  if (!product) throw new NotFoundError('PRODUCT_NOT_FOUND');
  const field = await fields.variantFieldOfProduct(trx, shopId, product.id, fieldId);
  if (!field) throw new NotFoundError('VARIANT_FIELD_NOT_FOUND');
  const price = adjustment(input.price_adjustment, 'price_adjustment', product.currency);
  const last = await fields.lastOptionSortOrder(trx, shopId, field.id);
  const [row] = await fields.insertVariantFieldOptions(trx, shopId, [
    {
      id: newId('vfo'),
      field_id: field.id,
      value: input.value,
      price_adjustment: price,
      sort_order: input.sort_order ?? (last === null ? 0 : last + 1),
      created_at: now,
    },
  ]);
  effects.audit({ action: 'variant_field.option_added', resourceType: 'product', resourceId: product.id });
  return variantFieldOptionView(row!);
}

/** Partial update of a quantity deal: `product_ids` and `tiers` replace what the deal had. */
export async function updateQuantityDeal(
  w: ShopWrite,
  uniqid: string,
  input: UpdateQuantityDealInput,
): Promise<Record<string, never>> {
  const { trx, shopId, effects, now } = w;
  const deal = await deals.quantityDealByUniqidForUpdate(trx, shopId, uniqid);
  if (!deal) throw new NotFoundError('QUANTITY_DEAL_NOT_FOUND');
  const problems: ErrorDetail[] = [];
  if (input.product_ids !== undefined) {
    const found = await deals.productIdsInShop(trx, shopId, input.product_ids);
    input.product_ids.forEach((id, i) => {
      if (!found.has(id)) problems.push({ field: `product_ids[${i}]`, message: 'is not a product of this shop' });
    });
  }
  const tiers = input.tiers?.map((t, i) => ({
    min_quantity: t.min_quantity,
    discount_type: t.discount_type,
    discount_value: tierValue(t, i, problems),
  }));
  const seen = new Map<number, number>();
  (input.tiers ?? []).forEach((t, i) => {
    const first = seen.get(t.min_quantity);
    if (first !== undefined)
      problems.push({ field: `tiers[${i}].min_quantity`, message: `repeats tiers[${first}].min_quantity` });
    else seen.set(t.min_quantity, i);
  });
  if (problems.length > 0) throw new ValidationError(problems);

  await deals.updateQuantityDealRow(trx, shopId, deal.id, {
    ...(input.title !== undefined ? { title: input.title } : {}),
    ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
    updated_at: now,
  });
  if (input.product_ids !== undefined) await deals.replaceQuantityDealProducts(trx, shopId, deal.id, input.product_ids);
  if (tiers !== undefined) await deals.replaceQuantityDealTiers(trx, shopId, deal.id, tiers);
  effects.audit({ action: 'quantity_deal.updated', resourceType: 'quantity_deal', resourceId: deal.uniqid });
  return {};
}

function tierValue(tier: components['schemas']['QuantityDealTier'], index: number, problems: ErrorDetail[]): string {
  const field = `tiers[${index}].discount_value`;
  try {
    const value = parseAmount(tier.discount_value, field, { exclusiveMin: true });
    if (tier.discount_type === 'PERCENTAGE' && Number(value) > 100)
      problems.push({ field, message: 'of a PERCENTAGE tier must be at most 100' });
    return value;
  } catch (err) {
    if (err instanceof ValidationError && err.details) problems.push(...err.details);
    else throw err;
    return '0';
  }
}

/** `GET /products/addons`: newest first. */
export const addonList: ListSpec = {
  name: 'addons',
  filters: {},
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

export const addonCursorList: CursorList<addons.AddonPageRow, AddonView, undefined> = {
  spec: addonList,
  page: addons.addonsPage,
  async view(rows, { db, shopId }) {
    const products = await addons.productIdsOfAddons(
      db,
      shopId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => addonView(r, products.get(r.id) ?? []));
  },
};

function sortOptions(rows: VariantFieldOptionRow[]): VariantFieldOptionRow[] {
  return [...rows].sort((a, b) => a.sort_order - b.sort_order || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    const list = groups.get(k);
    if (list) list.push(row);
    else groups.set(k, [row]);
  }
  return groups;
}

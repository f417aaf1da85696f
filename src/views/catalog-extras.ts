// Variant fields, their options and add-ons -> the contract's VariantField, VariantFieldOption and Addon.
import type { AddonRow, VariantFieldOptionRow, VariantFieldRow } from '../../db/tables';
import { jsonAmount } from '../platform/money';
import { unixSeconds } from './time';

export function variantFieldOptionView(row: VariantFieldOptionRow) {
  return {
    id: row.id,
    field_id: row.field_id,
    value: row.value,
    price_adjustment: jsonAmount(row.price_adjustment),
    sort_order: row.sort_order,
    created_at: unixSeconds(row.created_at),
  };
}

export function variantFieldView(row: VariantFieldRow, options: readonly VariantFieldOptionRow[]) {
  return {
    id: row.id,
    product_id: row.product_id,
    name: row.name,
    sort_order: row.sort_order,
    options: options.map(variantFieldOptionView),
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

export type VariantFieldView = ReturnType<typeof variantFieldView>;
export type VariantFieldOptionView = ReturnType<typeof variantFieldOptionView>;

export function addonView(row: AddonRow, productIds: readonly string[]) {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    price: jsonAmount(row.price),
    currency: row.currency,
    product_ids: [...productIds],
    required: row.required,
    enabled: row.enabled,
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

export type AddonView = ReturnType<typeof addonView>;

// Product rows -> the Product object of the contract. Amounts are exact decimals in the database and JSON numbers
// with the same digits here, as the specification says for products.
import { jsonAmount } from '../platform/money';
import type { ProductRow, ProductVariantRow } from '../../db/tables';
import { unixSeconds } from './time';

export function variantView(row: ProductVariantRow, withPrices: boolean) {
  return {
    id: row.id,
    title: row.title,
    ...(withPrices ? { price: jsonAmount(row.price), price_display: jsonAmount(row.price_display) } : {}),
    stock: row.stock,
    sort_priority: row.sort_priority,
    created_at: unixSeconds(row.created_at),
  };
}

export function productView(row: ProductRow, variants: ProductVariantRow[], withVariantPrices: boolean) {
  return {
    id: row.id,
    uniqid: row.uniqid,
    shop_id: row.shop_id,
    slug: row.slug,
    type: row.type,
    subtype: row.subtype,
    title: row.title,
    currency: row.currency,
    description: row.description,
    price: jsonAmount(row.price),
    price_display: jsonAmount(row.price_display),
    description_tabs: row.description_tabs,
    gateways: row.gateways,
    custom_fields: row.custom_fields,
    delivery_instructions: row.delivery_instructions,
    quantity_min: row.quantity_min,
    quantity_max: row.quantity_max,
    quantity_warning: row.quantity_warning,
    stock: row.stock,
    stock_delimiter: row.stock_delimiter,
    unlisted: row.unlisted,
    private: row.private,
    on_hold: row.on_hold,
    block_vpn_proxies: row.block_vpn_proxies,
    watermark_enabled: row.watermark_enabled,
    sort_priority: row.sort_priority,
    crypto_confirmations: row.crypto_confirmations,
    max_risk_level: row.max_risk_level,
    delivery_text: row.delivery_text,
    service_text: row.service_text,
    delivery_time: row.delivery_time,
    dynamic_webhook: row.dynamic_webhook,
    image_id: row.image_id,
    image_url: row.image_url,
    // A license product (migration 0013, src/domain/licenses/issuing.ts): the terms of the keys its orders issue.
    ...(row.license_activation_limit !== null
      ? { license: { activation_limit: row.license_activation_limit, duration_days: row.license_duration_days } }
      : {}),
    variants: variants.map((v) => variantView(v, withVariantPrices)),
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}

// Storefront branding and layout: one row per shop, stored on the first write. A shop that never wrote its settings
// reads the defaults below (dated from the shop's creation), the same before and after any other write.
//
// Both PUTs replace the whole object (the contract requires every field; a field left out is 422 and nothing is
// written). Checks beyond the contract's schema, decided here and written into openapi.yaml:
//   - colours are stored and returned in lower case (`#1A73E8` -> `#1a73e8`);
//   - `logo_url` and `favicon_url` are absolute https URLs (the contract's branding takes image URLs, not image
//     ids: no image resource exists in the contract to point at), without user or password;
//   - footer link URLs are absolute http(s) URLs without user or password;
//   - `name` and footer `label` must not be blank; `announcement` "" is stored as null (no banner).
import * as settings from '../../../db/queries/store-settings';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { StoreSettingsRow } from '../../../db/tables';
import { ValidationError, type ErrorDetail } from '../../errors';
import type { ShopWrite } from '../../platform/unit-of-work';
import { defaultBrandColors, pageBrand, type PageBrand } from '../../views/page-layout';
import { storeBrandingView, storeLayoutView } from '../../views/store';

/** What a shop that never wrote its settings reads (besides `name`, the shop's own name). */
export const brandingDefaults = {
  logo_url: null,
  favicon_url: null,
  primary_color: defaultBrandColors.primary,
  accent_color: defaultBrandColors.accent,
  support_email: null,
} as const;

export const layoutDefaults = {
  product_grid_columns: 3,
  show_search: true,
  show_categories: true,
  show_reviews: true,
  announcement: null,
  footer_links: [] as { url: string; label: string }[],
} as const;

/** The settings id of a shop: fixed by the shop id, so the row a shop never wrote has the same id once written. */
export function settingsIdOf(shopId: string): string {
  return `sts_${shopId.replace(/^shop_/, '')}`;
}

function defaultRow(shopId: string, shopName: string, createdAt: Date): StoreSettingsRow {
  return {
    id: settingsIdOf(shopId),
    shop_id: shopId,
    // The branding name is the storefront's title; it starts as the shop's name, clipped to the contract's 100.
    name: shopName.slice(0, 100) || 'Store',
    ...brandingDefaults,
    branding_updated_at: createdAt,
    ...layoutDefaults,
    footer_links: [],
    layout_updated_at: createdAt,
    created_at: createdAt,
  };
}

async function defaults(db: ReadDb, shopId: string): Promise<StoreSettingsRow> {
  const shop = await settings.shopNameAndCreatedAt(db, shopId);
  if (!shop) throw new Error(`shop ${shopId} vanished`);
  return defaultRow(shopId, shop.name, shop.created_at);
}

async function settingsRow(db: ReadDb, shopId: string): Promise<StoreSettingsRow> {
  return (await settings.storeSettingsOfShop(db, shopId)) ?? defaults(db, shopId);
}

/** The row, stored now (with the defaults) if the shop had none, locked until the transaction ends. */
async function settingsForUpdate({ trx, shopId }: ShopWrite): Promise<StoreSettingsRow> {
  const { shop_id: _shop, footer_links: _links, ...fresh } = await defaults(trx, shopId);
  return settings.storeSettingsForUpdate(trx, shopId, { ...fresh, footer_links: '[]' });
}

export async function getBranding(db: ReadDb, shopId: string) {
  return storeBrandingView(await settingsRow(db, shopId));
}

/** How the shop's hosted pages (checkout, consent) show it: its branding, checked for the page (views/page-layout). */
export async function pageBrandOf(db: ReadDb, shopId: string, publicUrl: string): Promise<PageBrand> {
  return pageBrand(await getBranding(db, shopId), publicUrl);
}

export async function getLayout(db: ReadDb, shopId: string) {
  return storeLayoutView(await settingsRow(db, shopId));
}

export interface BrandingInput {
  name: string;
  logo_url: string | null;
  favicon_url: string | null;
  primary_color: string;
  accent_color: string;
  support_email: string | null;
}

export interface LayoutInput {
  product_grid_columns: number;
  show_search: boolean;
  show_categories: boolean;
  show_reviews: boolean;
  announcement: string | null;
  footer_links: { url: string; label: string }[];
}

/** Why `value` is not an acceptable absolute URL with one of `protocols`, or undefined when it is. */
export function urlProblem(value: string, protocols: readonly string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (!protocols.includes(url.protocol)) return `must be an ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL`;
  if (url.hostname === '') return 'must name a host';
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password';
  return undefined;
}

/** Problems of a branding beyond the contract's schema (see the top of this file). */
export function brandingProblems(input: BrandingInput): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (input.name.trim() === '') problems.push({ field: 'name', message: 'must not be blank' });
  for (const field of ['logo_url', 'favicon_url'] as const) {
    const value = input[field];
    const problem = value === null ? undefined : urlProblem(value, ['https:']);
    if (problem) problems.push({ field, message: problem });
  }
  return problems;
}

/** Problems of a layout beyond the contract's schema. */
export function layoutProblems(input: LayoutInput): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  input.footer_links.forEach((link, i) => {
    const problem = urlProblem(link.url, ['http:', 'https:']);
    if (problem) problems.push({ field: `footer_links[${i}].url`, message: problem });
    if (link.label.trim() === '') problems.push({ field: `footer_links[${i}].label`, message: 'must not be blank' });
  });
  return problems;
}

function refuse(problems: ErrorDetail[]): void {
  if (problems.length > 0)
    throw new ValidationError(problems, problems.map((p) => `${p.field} ${p.message}`).join('; '));
}

function brandingChanges(input: BrandingInput): settings.BrandingChanges {
  return {
    name: input.name,
    logo_url: input.logo_url,
    favicon_url: input.favicon_url,
    primary_color: input.primary_color.toLowerCase(),
    accent_color: input.accent_color.toLowerCase(),
    support_email: input.support_email,
  };
}

function layoutChanges(input: LayoutInput): settings.LayoutChanges {
  return {
    product_grid_columns: input.product_grid_columns,
    show_search: input.show_search,
    show_categories: input.show_categories,
    show_reviews: input.show_reviews,
    announcement: input.announcement === '' ? null : input.announcement,
    footer_links: input.footer_links.map((l) => ({ url: l.url, label: l.label })),
  };
}

/** PUT /store/branding: replaces every field. A refused branding changes nothing (checked before any write). */
export async function replaceBranding(w: ShopWrite, input: BrandingInput) {
  const { trx, shopId, effects, now } = w;
  refuse(brandingProblems(input));
  const current = await settingsForUpdate(w);
  const row = await settings.updateBranding(trx, shopId, brandingChanges(input), now);
  effects.audit({ action: 'store_branding.updated', resourceType: 'store_settings', resourceId: current.id });
  return storeBrandingView(row);
}

/** PUT /store/layout: replaces every field. A refused layout changes nothing. */
export async function replaceLayout(w: ShopWrite, input: LayoutInput) {
  const { trx, shopId, effects, now } = w;
  refuse(layoutProblems(input));
  const current = await settingsForUpdate(w);
  const row = await settings.updateLayout(trx, shopId, layoutChanges(input), now);
  effects.audit({ action: 'store_layout.updated', resourceType: 'store_settings', resourceId: current.id });
  return storeLayoutView(row);
}

/** Fixtures: branding and layout fields as given (already validated), the rest keeping their current values. */
export async function writeSettingsFixture(
  w: ShopWrite,
  branding: Partial<BrandingInput> | undefined,
  layout: Partial<LayoutInput> | undefined,
): Promise<void> {
  const { trx, shopId, now } = w;
  const current = await settingsForUpdate(w);
  if (branding) {
    const merged = { ...storeBrandingView(current), ...branding };
    refuse(brandingProblems(merged));
    await settings.updateBranding(trx, shopId, brandingChanges(merged), now);
  }
  if (layout) {
    const merged = { ...storeLayoutView(current), ...layout };
    refuse(layoutProblems(merged));
    await settings.updateLayout(trx, shopId, layoutChanges(merged), now);
  }
}

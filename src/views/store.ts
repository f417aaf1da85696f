// Store settings rows -> the StoreBranding, StoreLayout and StoreDomain objects of the contract.
import type { StoreDomainRow, StoreSettingsRow } from '../../db/tables';

export function storeBrandingView(row: StoreSettingsRow) {
  return {
    name: row.name,
    logo_url: row.logo_url,
    favicon_url: row.favicon_url,
    primary_color: row.primary_color,
    accent_color: row.accent_color,
    support_email: row.support_email,
    updated_at: row.branding_updated_at.toISOString(),
  };
}

export function storeLayoutView(row: StoreSettingsRow) {
  return {
    product_grid_columns: row.product_grid_columns,
    show_search: row.show_search,
    show_categories: row.show_categories,
    show_reviews: row.show_reviews,
    announcement: row.announcement,
    footer_links: row.footer_links.map((l) => ({ url: l.url, label: l.label })),
    updated_at: row.layout_updated_at.toISOString(),
  };
}

export function storeDomainView(row: StoreDomainRow) {
  return {
    id: row.id,
    domain: row.domain,
    status: row.status,
    verification: { type: 'TXT' as const, name: row.record_name, value: row.record_value },
    ssl_status: row.ssl_status,
    verified_at: row.verified_at ? row.verified_at.toISOString() : null,
    last_checked_at: row.last_checked_at ? row.last_checked_at.toISOString() : null,
    last_check_error: row.last_check_error,
    created_at: row.created_at.toISOString(),
  };
}

export type StoreDomainView = ReturnType<typeof storeDomainView>;

// Theme rows -> the Theme, ThemeSettings, ThemeDocument and ThemePreviewSession objects of the contract. Timestamps
// are ISO 8601 strings. What the base's rules decide (whether it is retired, its default settings) is worked out by
// the domain (src/domain/themes/bases.ts) and handed in.
import type { ThemePreviewSessionRow, ThemeRevisionRow, ThemeRow } from '../../db/tables';

const iso = (d: Date) => d.toISOString();

export function themeView(row: ThemeRow, baseRetired: boolean) {
  return {
    id: row.id,
    name: row.name,
    base: row.base,
    base_retired: baseRetired,
    published: row.live,
    revision: row.revision,
    published_revision: row.published_revision,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export type ThemeView = ReturnType<typeof themeView>;

/** `settings`: the theme's effective settings (its base's defaults under the stored values). */
export function themeSettingsView(row: ThemeRow, settings: Record<string, unknown>) {
  return {
    theme_id: row.id,
    settings,
    updated_at: iso(row.settings_updated_at),
  };
}

export function themeDocumentView(themeId: string, kind: 'published' | 'draft', revision: ThemeRevisionRow, at: Date) {
  return {
    theme_id: themeId,
    kind,
    revision: revision.revision,
    document: revision.document,
    updated_at: iso(at),
  };
}

export function themePreviewSessionView(row: ThemePreviewSessionRow, url: string) {
  return {
    id: row.id,
    theme_id: row.theme_id,
    revision: row.revision,
    url,
    expires_at: iso(row.expires_at),
    created_at: iso(row.created_at),
  };
}

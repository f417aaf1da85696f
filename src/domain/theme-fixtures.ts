// The theme part of the fixture format (src/domain/fixtures.ts, docs/fixtures.md): themes imported as they stand,
// on any base, including the retired ones (apex, nebula, phantom, shadow, vault) that the API no longer creates:
// this is how such themes are imported. Each theme lists its document revisions in order (revision 1 first; the
// last is the draft; default: the base's starter document), may name the published revision, and at most one theme
// of the file is `live`. Every revision is checked against its base's document schema and the settings against the
// base's settings, before anything is written.
import type { Transaction } from 'kysely';
import * as themeQueries from '../../db/queries/themes';
import type { Database, ThemeBase } from '../../db/tables';
import { allBases, documentProblems, settingsProblems, starterDocument } from './theme-bases';
import { insertThemeWithDocument } from './themes';

/** Properties of the fixture schema. */
export const themeFixtureSchema = {
  themes: {
    type: 'array',
    maxItems: 100,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'base'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 100 },
        base: { enum: [...allBases] },
        settings: { type: 'object' },
        revisions: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'object' } },
        published_revision: { type: 'integer', minimum: 1 },
        live: { type: 'boolean' },
      },
    },
  },
} as const;

export interface ThemeFixture {
  name: string;
  base: ThemeBase;
  settings?: Record<string, unknown>;
  revisions?: Record<string, unknown>[];
  published_revision?: number;
  live?: boolean;
}

export interface ThemeFixtures {
  themes?: ThemeFixture[];
}

/** Rules across fields and items that the JSON Schema does not say. */
export function themeFixtureProblems(f: ThemeFixtures): string[] {
  const problems: string[] = [];
  let live = 0;
  (f.themes ?? []).forEach((t, i) => {
    const count = t.revisions?.length ?? 1;
    (t.revisions ?? []).forEach((doc, r) => {
      for (const p of documentProblems(t.base, doc))
        problems.push(
          `/themes/${i}/revisions/${r} ${p.field.replace(/^document\.?/, '') || '(document)'} ${p.message}`,
        );
    });
    for (const p of settingsProblems(t.base, t.settings ?? {}))
      problems.push(`/themes/${i}/${p.field.replace(/\./g, '/')} ${p.message}`);
    if (t.published_revision !== undefined && t.published_revision > count)
      problems.push(`/themes/${i}/published_revision names no revision of the theme (it has ${count})`);
    if (t.live === true) {
      live++;
      if (t.published_revision === undefined) problems.push(`/themes/${i}/live needs a published_revision`);
    }
  });
  if (live > 1) problems.push('/themes: at most one theme may be live');
  return problems;
}

/** Writes the themes with all their revisions; returns their ids. */
export async function seedThemeFixtures(
  trx: Transaction<Database>,
  shopId: string,
  f: ThemeFixtures,
  now: Date,
): Promise<{ themes: string[] }> {
  const ids: string[] = [];
  for (const t of f.themes ?? []) {
    const revisions = t.revisions ?? [starterDocument(t.base)];
    // Settings: null values mean "the default", so they are simply not stored.
    const settings = Object.fromEntries(Object.entries(t.settings ?? {}).filter(([, v]) => v !== null));
    const theme = await insertThemeWithDocument(
      trx,
      shopId,
      { name: t.name, base: t.base, settings },
      revisions[0]!,
      now,
    );
    for (let r = 1; r < revisions.length; r++) {
      const advanced = await themeQueries.advanceDraftRevision(trx, shopId, theme.id, r, now);
      if (!advanced) throw new Error(`theme ${theme.id} did not advance to revision ${r + 1}`);
      await themeQueries.insertRevision(trx, shopId, theme.id, r + 1, revisions[r]!, now);
    }
    if (t.published_revision !== undefined) {
      // Publish exactly the named revision (it may be older than the draft).
      if (t.live === true) await themeQueries.unsetOtherLiveThemes(trx, shopId, theme.id, now);
      await themeQueries.setPublished(trx, shopId, theme.id, t.published_revision, t.live === true, now);
    }
    ids.push(theme.id);
  }
  return { themes: ids };
}

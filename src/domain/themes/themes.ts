// Themes: the list, creation on a live base, settings, the published document and the draft with its revisions,
// the document schema, preview sessions and publishing.
//
// Revisions (specification "Theme automation"): a theme's draft is its latest revision; revision 1 is the base's
// starter document. A save sends `expected_revision` = the draft's `revision` and stores the next revision; a publish
// sends `expected_revision` = the revision the save returned and makes that revision the published document. Both
// compare and set in one conditional UPDATE (db/queries/themes.ts), so of two requests on one revision exactly one
// wins and the other is 409 REVISION_CONFLICT, having changed nothing. Every revision is kept: a preview can show
// any of them.
//
// Retired bases (apex, nebula, phantom, shadow, vault): no new theme may use them (422), but a theme on one (imported
// by fixtures) reads, saves, previews and publishes under its base's schema like any other.
import { createHash, randomBytes } from 'node:crypto';
import * as themes from '../../../db/queries/themes';
import type { ReadDb } from '../../../db/queries/shop-scope';
import type { ThemeBase, ThemeRow } from '../../../db/tables';
import { ApiError, NotFoundError, ValidationError } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ShopWrite } from '../../platform/unit-of-work';
import {
  themeDocumentView,
  themePreviewSessionView,
  themeSettingsView,
  themeView,
  type ThemeView,
} from '../../views/theme';
import {
  documentProblems,
  documentSchemaOf,
  effectiveSettings,
  isRetiredBase,
  settingsProblems,
  starterDocument,
} from './bases';

/** How long a preview URL works (the contract: 1 hour). */
export const previewLifetimeMs = 60 * 60 * 1000;

/** Where preview pages are served (src/pages/theme-preview/router.ts), outside /dev/v1. */
export const previewPathPrefix = '/theme-preview/';

export const themeCursorList: CursorList<themes.ThemePageRow, ThemeView> = {
  spec: {
    name: 'themes',
    filters: {},
    sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
    defaultSort: '-created_at',
  },
  page: themes.themesPage,
  view: (rows) => rows.map(shown),
};

/** A theme as the contract shows it: the view, told whether its base is retired. */
function shown(row: ThemeRow): ThemeView {
  return themeView(row, isRetiredBase(row.base));
}

/** A theme's settings as shown: its base's defaults under the stored values. */
function settingsShown(row: ThemeRow) {
  return themeSettingsView(row, effectiveSettings(row.base, row.settings));
}

async function theme(db: ReadDb, shopId: string, id: string): Promise<ThemeRow> {
  const row = await themes.themeById(db, shopId, id);
  if (!row) throw new NotFoundError('THEME_NOT_FOUND');
  return row;
}

async function revision(db: ReadDb, row: ThemeRow, number: number) {
  const found = await themes.revisionOf(db, row.shop_id, row.id, number);
  // The rows reference each other only by number: a missing one is a broken database, answered as a 500.
  if (!found) throw new Error(`theme ${row.id} has no revision ${number}`);
  return found;
}

function refuseDocument(base: ThemeBase, document: unknown): void {
  const problems = documentProblems(base, document);
  if (problems.length > 0)
    throw new ValidationError(problems, `The document does not satisfy the ${base} theme document schema.`);
}

function revisionConflict(current: ThemeRow, expected: number): ApiError {
  return new ApiError(
    'REVISION_CONFLICT',
    `The draft is at revision ${current.revision}, not ${expected}: read the draft again and send its revision.`,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------------------------------------------

export interface NewTheme {
  name: string;
  base: string;
}

/** Inserts a theme with `document` as revision 1 (creation and fixtures); the base is not checked for retirement. */
export async function insertThemeWithDocument(
  w: ShopWrite,
  input: { name: string; base: ThemeBase; settings?: Record<string, unknown> },
  document: Record<string, unknown>,
): Promise<ThemeRow> {
  const { trx, shopId, now } = w;
  return themes.insertTheme(
    trx,
    shopId,
    {
      id: newId('thm'),
      name: input.name,
      base: input.base,
      settings: JSON.stringify(input.settings ?? {}),
      settings_updated_at: now,
      revision: 1,
      created_at: now,
      updated_at: now,
    },
    document,
  );
}

/**
 * POST /themes/control/create: a theme on a live base (a retired base: 422 with a detail on `base`), not published,
 * whose draft (revision 1) is the base's starter document.
 */
export async function createTheme(w: ShopWrite, input: NewTheme): Promise<ThemeView> {
  if (isRetiredBase(input.base))
    throw new ValidationError(
      [{ field: 'base', message: `${input.base} is retired: use default, classic, pulse, starlight or clean-minimal` }],
      `The base ${input.base} is retired and cannot be used for new themes.`,
    );
  const base = input.base as ThemeBase;
  const row = await insertThemeWithDocument(w, { name: input.name, base }, starterDocument(base));
  w.effects.audit({ action: 'theme.created', resourceType: 'theme', resourceId: row.id, detail: { base } });
  return shown(row);
}

// ---------------------------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------------------------

export async function getThemeSettings(db: ReadDb, shopId: string, id: string) {
  return settingsShown(await theme(db, shopId, id));
}

/**
 * POST /themes/{id}/control/settings: sets the given setting ids (null: back to the base's default); others keep
 * their value. An unknown id or a bad value is 422 with `settings.<id>` paths, and nothing is written. Settings do
 * not change the document's revision.
 */
export async function updateThemeSettings(w: ShopWrite, id: string, settings: Record<string, unknown>) {
  const { trx, shopId, effects, now } = w;
  const current = await themes.themeForUpdate(trx, shopId, id);
  if (!current) throw new NotFoundError('THEME_NOT_FOUND');
  const problems = settingsProblems(current.base, settings);
  if (problems.length > 0) throw new ValidationError(problems, 'The settings are not valid for this theme.');
  const merged: Record<string, unknown> = { ...current.settings };
  for (const [key, value] of Object.entries(settings)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  const row = await themes.updateSettings(trx, shopId, id, merged, now);
  if (!row) throw new Error(`theme ${id} vanished while locked`);
  effects.audit({
    action: 'theme.settings_updated',
    resourceType: 'theme',
    resourceId: id,
    detail: { settings: Object.keys(settings).sort() },
  });
  return settingsShown(row);
}

// ---------------------------------------------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------------------------------------------

/** GET /themes/{id}/control/document: the published revision; a theme never published is 404 THEME_NOT_PUBLISHED. */
export async function getPublishedDocument(db: ReadDb, shopId: string, id: string) {
  const row = await theme(db, shopId, id);
  if (row.published_revision === null || row.published_at === null)
    throw new ApiError(
      'THEME_NOT_PUBLISHED',
      'The theme has never been published: read its draft, or publish it first.',
    );
  return themeDocumentView(row.id, 'published', await revision(db, row, row.published_revision), row.published_at);
}

/** GET /themes/{id}/control/document/draft: the latest revision; its `revision` is the next save's expected_revision. */
export async function getDraft(db: ReadDb, shopId: string, id: string) {
  const row = await theme(db, shopId, id);
  const draft = await revision(db, row, row.revision);
  return themeDocumentView(row.id, 'draft', draft, draft.created_at);
}

/** GET /themes/{id}/control/document/schema. */
export async function getDocumentSchema(db: ReadDb, shopId: string, id: string) {
  const row = await theme(db, shopId, id);
  return { theme_id: row.id, base: row.base, schema: documentSchemaOf(row.base) };
}

/**
 * PUT /themes/{id}/control/document: checked in this order, each refusal changing nothing: the theme exists (404),
 * the document satisfies its base's schema (422 with paths), the draft is still at `expected_revision` (409
 * REVISION_CONFLICT, decided by the conditional UPDATE itself). Stores the next revision and returns it as the draft.
 */
export async function saveDraft(
  w: ShopWrite,
  id: string,
  input: { expected_revision: number; document: Record<string, unknown> },
) {
  const { trx, shopId, effects, now } = w;
  const current = await theme(trx, shopId, id);
  refuseDocument(current.base, input.document);
  const advanced = await themes.advanceDraftRevision(trx, shopId, id, input.expected_revision, now);
  if (!advanced) throw revisionConflict(await theme(trx, shopId, id), input.expected_revision);
  const saved = await themes.insertRevision(trx, shopId, id, advanced.revision, input.document, now);
  effects.audit({
    action: 'theme.draft_saved',
    resourceType: 'theme',
    resourceId: id,
    detail: { revision: saved.revision },
  });
  return themeDocumentView(id, 'draft', saved, saved.created_at);
}

/**
 * POST /themes/{id}/control/publish: the draft must still be at `expected_revision` (409 REVISION_CONFLICT) and
 * satisfy its base's schema (422); it becomes the published document, and the theme the shop's live theme (the
 * previously live theme, if another, stops being live but keeps its published revision). Publishing is serialised
 * per shop, so two publishes of different themes cannot both end live.
 */
export async function publishTheme(w: ShopWrite, id: string, expectedRevision: number): Promise<ThemeView> {
  const { trx, shopId, effects, now } = w;
  const current = await theme(trx, shopId, id);
  if (current.revision !== expectedRevision) throw revisionConflict(current, expectedRevision);
  refuseDocument(current.base, (await revision(trx, current, expectedRevision)).document);
  await themes.lockShopPublishing(trx, shopId);
  await themes.unsetOtherLiveThemes(trx, shopId, id, now);
  const published = await themes.publishDraft(trx, shopId, id, expectedRevision, now);
  // A save committed between the read above and this statement: the compare-and-set refuses (and the transaction,
  // with the other theme's change, rolls back).
  if (!published) throw revisionConflict(await theme(trx, shopId, id), expectedRevision);
  effects.audit({
    action: 'theme.published',
    resourceType: 'theme',
    resourceId: id,
    detail: { revision: expectedRevision },
  });
  return shown(published);
}

// ---------------------------------------------------------------------------------------------------------------
// Preview sessions
// ---------------------------------------------------------------------------------------------------------------

export function previewTokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * POST /themes/{id}/control/preview: a session of `revision` (default the draft; one the theme does not have is 422
 * with a detail on `revision`) whose private URL (`<public URL>/theme-preview/<token>`, 256 random bits) renders that
 * revision until `expires_at` (1 hour) or until stopped. Only the token's SHA-256 is stored.
 */
export async function startPreview(
  w: ShopWrite,
  id: string,
  input: { revision?: number },
  deps: { publicUrl: string },
) {
  const { trx, shopId, effects, now } = w;
  const row = await theme(trx, shopId, id);
  const number = input.revision ?? row.revision;
  if (number > row.revision || !(await themes.revisionOf(trx, shopId, id, number)))
    throw new ValidationError([
      { field: 'revision', message: `the theme has no revision ${number} (its draft is revision ${row.revision})` },
    ]);
  const token = randomBytes(32).toString('base64url');
  const session = await themes.insertPreviewSession(trx, shopId, {
    id: newId('pvs'),
    theme_id: id,
    revision: number,
    token_hash: previewTokenHash(token),
    expires_at: new Date(now.getTime() + previewLifetimeMs),
    created_at: now,
  });
  effects.audit({
    action: 'theme.preview_started',
    resourceType: 'theme',
    resourceId: id,
    detail: { session_id: session.id, revision: number },
  });
  return themePreviewSessionView(session, `${deps.publicUrl}${previewPathPrefix}${token}`);
}

/**
 * DELETE /themes/{id}/control/preview/{sessionId}: stops a running session; its URL answers 410 from then on. A
 * session that is unknown, of another theme, already stopped or expired is 404 PREVIEW_SESSION_NOT_FOUND.
 */
export async function stopPreview(w: ShopWrite, id: string, sessionId: string): Promise<Record<string, never>> {
  const { trx, shopId, effects, now } = w;
  await theme(trx, shopId, id);
  const stopped = await themes.stopPreviewSession(trx, shopId, id, sessionId, now);
  if (!stopped) throw new NotFoundError('PREVIEW_SESSION_NOT_FOUND');
  effects.audit({
    action: 'theme.preview_stopped',
    resourceType: 'theme',
    resourceId: id,
    detail: { session_id: sessionId },
  });
  return {};
}

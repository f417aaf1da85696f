// Themes, their document revisions and their preview sessions. The revision rules are compare-and-set in ONE
// conditional UPDATE each (`where revision = <expected>`): of two saves on one revision, the second waits for the
// first's row lock, re-reads the row, no longer matches and changes nothing.
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, ThemePreviewSessionRow, ThemeRevisionRow, ThemeRow } from '../tables';
import { shopById } from './shops';
import { byIdOf, pageOf } from './shop-rows';
import { inShop, inShopForWrite, type ReadDb, type ShopRow } from './shop-scope';

export const themesPage = pageOf('themes');
export type ThemePageRow = Awaited<ReturnType<typeof themesPage>>[number];

export const themeById = byIdOf('themes');

export async function insertTheme(
  trx: Transaction<Database>,
  shopId: string,
  theme: ShopRow<'themes'>,
  document: Record<string, unknown>,
): Promise<ThemeRow> {
  const row = await inShopForWrite(trx, shopId).insertInto('themes', theme).returningAll().executeTakeFirstOrThrow();
  await insertRevision(trx, shopId, row.id, row.revision, document, row.created_at);
  return row;
}

export async function insertRevision(
  trx: Transaction<Database>,
  shopId: string,
  themeId: string,
  revision: number,
  document: Record<string, unknown>,
  now: Date,
): Promise<ThemeRevisionRow> {
  return inShopForWrite(trx, shopId)
    .insertInto('theme_revisions', {
      theme_id: themeId,
      revision,
      document: JSON.stringify(document),
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** One revision of a theme's document, or undefined. */
export function revisionOf(
  db: ReadDb,
  shopId: string,
  themeId: string,
  revision: number,
): Promise<ThemeRevisionRow | undefined> {
  return inShop(db, shopId)
    .selectFrom('theme_revisions')
    .selectAll()
    .where('theme_id', '=', themeId)
    .where('revision', '=', revision)
    .executeTakeFirst();
}

/**
 * The draft moves to the next revision if it is still at `expected` (compare-and-set in one statement); undefined
 * when it is not (or the theme does not exist).
 */
export function advanceDraftRevision(
  trx: Transaction<Database>,
  shopId: string,
  themeId: string,
  expected: number,
  now: Date,
): Promise<ThemeRow | undefined> {
  return inShopForWrite(trx, shopId)
    .updateTable('themes')
    .set({ revision: sql<number>`revision + 1`, updated_at: now })
    .where('id', '=', themeId)
    .where('revision', '=', expected)
    .returningAll()
    .executeTakeFirst();
}

/** Publishing is serialised per shop (one live theme): this lock is held until the transaction ends. */
export async function lockShopPublishing(trx: Transaction<Database>, shopId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`themes.publish:${shopId}`}, 0))`.execute(trx);
}

/** The shop's other live theme (if any) stops being live. */
export async function unsetOtherLiveThemes(
  trx: Transaction<Database>,
  shopId: string,
  themeId: string,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('themes')
    .set({ live: false, updated_at: now })
    .where('live', '=', true)
    .where('id', '<>', themeId)
    .execute();
}

/** Publishes the draft if it is still at `expected` (compare-and-set in one statement); undefined when it is not. */
export function publishDraft(
  trx: Transaction<Database>,
  shopId: string,
  themeId: string,
  expected: number,
  now: Date,
): Promise<ThemeRow | undefined> {
  return inShopForWrite(trx, shopId)
    .updateTable('themes')
    .set({ published_revision: sql<number>`revision`, live: true, published_at: now, updated_at: now })
    .where('id', '=', themeId)
    .where('revision', '=', expected)
    .returningAll()
    .executeTakeFirst();
}

/** Marks `revision` as the published document (fixtures import a theme as it stands). */
export async function setPublished(
  trx: Transaction<Database>,
  shopId: string,
  themeId: string,
  revision: number,
  live: boolean,
  now: Date,
): Promise<void> {
  await inShopForWrite(trx, shopId)
    .updateTable('themes')
    .set({ published_revision: revision, live, published_at: now, updated_at: now })
    .where('id', '=', themeId)
    .execute();
}

/** Replaces the stored settings (already merged) of a theme, locked by the update itself. */
export function updateSettings(
  trx: Transaction<Database>,
  shopId: string,
  themeId: string,
  settings: Record<string, unknown>,
  now: Date,
): Promise<ThemeRow | undefined> {
  return inShopForWrite(trx, shopId)
    .updateTable('themes')
    .set({ settings: JSON.stringify(settings), settings_updated_at: now, updated_at: now })
    .where('id', '=', themeId)
    .returningAll()
    .executeTakeFirst();
}

/** The theme row locked until the transaction ends (settings are merged under it). */
export function themeForUpdate(trx: Transaction<Database>, shopId: string, themeId: string) {
  return inShop(trx, shopId).selectFrom('themes').selectAll().where('id', '=', themeId).forUpdate().executeTakeFirst();
}

// ---------------------------------------------------------------------------------------------------------------
// Preview sessions
// ---------------------------------------------------------------------------------------------------------------

export function insertPreviewSession(
  trx: Transaction<Database>,
  shopId: string,
  session: ShopRow<'theme_preview_sessions'>,
): Promise<ThemePreviewSessionRow> {
  return inShopForWrite(trx, shopId)
    .insertInto('theme_preview_sessions', session)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Stops a running session of the theme (not stopped, not expired at `now`); undefined when there is none. */
export function stopPreviewSession(
  trx: Transaction<Database>,
  shopId: string,
  themeId: string,
  sessionId: string,
  now: Date,
): Promise<ThemePreviewSessionRow | undefined> {
  return inShopForWrite(trx, shopId)
    .updateTable('theme_preview_sessions')
    .set({ stopped_at: now })
    .where('id', '=', sessionId)
    .where('theme_id', '=', themeId)
    .where('stopped_at', 'is', null)
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
}

export interface PreviewTarget {
  session: ThemePreviewSessionRow;
  theme: ThemeRow;
  document: Record<string, unknown>;
  shopName: string;
  /** The shop's mode: a test shop's preview carries the TEST MODE banner. */
  livemode: boolean;
}

/**
 * The session a preview URL's token opens, with its theme, the revision's document and the shop's name. By the
 * token's hash alone: the preview page has no credential, the unguessable token is the access (the row names its
 * shop).
 */
export async function previewByTokenHash(db: Kysely<Database>, tokenHash: string): Promise<PreviewTarget | undefined> {
  const session = await db
    .selectFrom('theme_preview_sessions')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
  if (!session) return undefined;
  const theme = await themeById(db, session.shop_id, session.theme_id);
  const revision = await revisionOf(db, session.shop_id, session.theme_id, session.revision);
  const shop = await shopById(db, session.shop_id);
  if (!theme || !revision || !shop) throw new Error(`preview session ${session.id} lost its theme, revision or shop`);
  return { session, theme, document: revision.document, shopName: shop.name, livemode: shop.livemode };
}

/** The products a storefront section lists: listed, public, not on hold, by the shop's sort priority then newest. */
export function storefrontProducts(db: ReadDb, shopId: string, limit: number) {
  return inShop(db, shopId)
    .selectFrom('products')
    .select(['id', 'title', 'price_display', 'currency'])
    .where('unlisted', '=', false)
    .where('private', '=', false)
    .where('on_hold', '=', false)
    .orderBy('sort_priority', 'desc')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

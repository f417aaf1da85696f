// Themes through HTTP: creation on the live bases and refusal of the retired ones, themes on every retired base
// (imported by fixtures) still read, save, preview and publish; settings; the draft, the published document and the
// schema; 422 with field paths for a document that breaks its base's schema; the revision rules (409
// REVISION_CONFLICT for a stale save or publish); preview sessions (the page renders the revision, escaped, until
// expiry by the clock or until stopped: then 410); cross-shop 404 on every {id} route; the scope matrix; a broken
// database answered as the 500 envelope and logged. Every refusal is checked for what it did not change. Races on
// real PostgreSQL: ten saves on one revision, two publishes of two themes.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import request from 'supertest';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-11-20T10:00:00Z'));
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { RATE_LIMIT_FREE: '100000' } });
});
afterAll(() => t.close());

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
const retired = ['apex', 'nebula', 'phantom', 'shadow', 'vault'] as const;
const creatable = ['default', 'classic', 'pulse', 'starlight', 'clean-minimal'] as const;
let unique = 0;
const uid = () => `${Date.now().toString(36)}${(++unique).toString(36)}`;

interface Shop {
  id: string;
  key: string;
}

async function newShop(): Promise<Shop> {
  const id = await t.createShop({ name: `Theme Shop ${uid()}`, currency: 'USD' });
  return { id, key: (await t.createKey(id, ['*'])).key };
}

const v1 = (path: string) => `/dev/v1${path}`;
const list = (s: Shop, query: Record<string, string | number> = {}, key = s.key) =>
  t.http.get(v1('/themes')).query(query).set(bearer(key));
const create = (s: Shop, body: Record<string, unknown>, key = s.key) =>
  t.http.post(v1('/themes/control/create')).set(bearer(key)).send(body);
const draft = (s: Shop, id: string, key = s.key) =>
  t.http.get(v1(`/themes/${id}/control/document/draft`)).set(bearer(key));
const published = (s: Shop, id: string, key = s.key) =>
  t.http.get(v1(`/themes/${id}/control/document`)).set(bearer(key));
const schema = (s: Shop, id: string, key = s.key) =>
  t.http.get(v1(`/themes/${id}/control/document/schema`)).set(bearer(key));
const save = (s: Shop, id: string, body: Record<string, unknown>, key = s.key) =>
  t.http
    .put(v1(`/themes/${id}/control/document`))
    .set(bearer(key))
    .send(body);
const publish = (s: Shop, id: string, expected: number, key = s.key) =>
  t.http
    .post(v1(`/themes/${id}/control/publish`))
    .set(bearer(key))
    .send({ expected_revision: expected });
const settings = (s: Shop, id: string, key = s.key) =>
  t.http.get(v1(`/themes/${id}/control/settings`)).set(bearer(key));
const setSettings = (s: Shop, id: string, body: Record<string, unknown>, key = s.key) =>
  t.http
    .post(v1(`/themes/${id}/control/settings`))
    .set(bearer(key))
    .send(body);
const preview = (s: Shop, id: string, body: Record<string, unknown> = {}, key = s.key) =>
  t.http
    .post(v1(`/themes/${id}/control/preview`))
    .set(bearer(key))
    .send(body);
const stopPreview = (s: Shop, id: string, sessionId: string, key = s.key) =>
  t.http.delete(v1(`/themes/${id}/control/preview/${sessionId}`)).set(bearer(key));

/** The page a preview URL serves (the URL's path on this app). */
const page = (url: string) => request(t.app).get(new URL(url).pathname);

async function newTheme(s: Shop, base = 'default', name = `Theme ${uid()}`): Promise<string> {
  const res = await create(s, { name, base });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

/** Everything the theme operations may write in a shop, for "a refusal changed nothing". */
async function world(shopId: string) {
  const text = async (query: ReturnType<typeof sql<{ s: string | null }>>) => (await query.execute(t.db)).rows[0]!.s;
  return {
    themes: await text(
      sql`select string_agg(to_jsonb(x)::text, ',' order by id) as s from themes x where shop_id = ${shopId}`,
    ),
    revisions: await text(
      sql`select string_agg(to_jsonb(x)::text, ',' order by theme_id, revision) as s from theme_revisions x where shop_id = ${shopId}`,
    ),
    previews: await text(
      sql`select string_agg(to_jsonb(x)::text, ',' order by id) as s from theme_preview_sessions x where shop_id = ${shopId}`,
    ),
    events: await text(sql`select string_agg(type, ',' order by id) as s from events where shop_id = ${shopId}`),
  };
}

const doc = (...titles: string[]) => ({ sections: titles.map((title) => ({ type: 'hero', title })) });

// ---------------------------------------------------------------------------------------------------------------

describe('create and list', () => {
  test('each live base creates a theme: revision 1 is the base starter document, not published', async () => {
    const s = await newShop();
    for (const base of creatable) {
      const res = await create(s, { name: `On ${base}`, base });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({
        name: `On ${base}`,
        base,
        base_retired: false,
        published: false,
        revision: 1,
        published_revision: null,
      });
      expect(res.body.data.id).toMatch(/^thm_/);
      const d = await draft(s, res.body.data.id);
      expect(d.status).toBe(200);
      expect(d.body.data).toMatchObject({ theme_id: res.body.data.id, kind: 'draft', revision: 1 });
      expect(d.body.data.document.sections[0]).toMatchObject({ type: 'hero' });
    }
    // Newest first, cursor pages of 2 without repeats.
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 3; i++) {
      const res = await list(s, { limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((x: { name: string }) => x.name));
      cursor = res.body.pagination.next_cursor ?? undefined;
      if (!res.body.pagination.has_more) break;
    }
    expect(seen).toEqual([...creatable].reverse().map((b) => `On ${b}`));
    expect(cursor).toBeUndefined();
  });

  test.each(retired)('the retired base %s is refused for creation (422), nothing written', async (base) => {
    const s = await newShop();
    const before = await world(s.id);
    const res = await create(s, { name: 'Retro', base });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'base' })]));
    expect(await world(s.id)).toEqual(before);
  });

  test('a bad name or an unknown base is 422, nothing written', async () => {
    const s = await newShop();
    const before = await world(s.id);
    for (const body of [
      { name: '', base: 'default' },
      { name: 'x'.repeat(101), base: 'default' },
      { name: 'X', base: 'neon' },
    ]) {
      const res = await create(s, body);
      expect(res.status).toBe(422);
      expect(res.body.error.details.length).toBeGreaterThan(0);
    }
    expect(await world(s.id)).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('themes on retired bases (fixtures) keep working', () => {
  let s: Shop;
  let ids: string[];

  beforeAll(async () => {
    s = await newShop();
    const seeded = await t.seed(s.id, {
      themes: retired.map((base, i) => ({
        name: `Legacy ${base}`,
        base,
        settings: { primary_color: '#123456' },
        revisions: [
          { sections: [{ type: 'banner', text: `Old ${base} banner`, tone: 'dark' }] },
          {
            sections: [
              { type: 'hero', title: `Legacy ${base} home` },
              { type: 'banner', text: `Now ${base}` },
            ],
          },
        ],
        published_revision: 1,
        live: i === 0,
      })),
    });
    ids = seeded.themes;
  });

  test('listed with base_retired, and they read: draft, published document, schema, settings', async () => {
    const res = await list(s);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(5);
    for (const theme of res.body.data)
      expect(theme).toMatchObject({ base_retired: true, revision: 2, published_revision: 1 });
    expect(
      res.body.data.filter((x: { published: boolean }) => x.published).map((x: { base: string }) => x.base),
    ).toEqual(['apex']);
    for (const [i, id] of ids.entries()) {
      const base = retired[i]!;
      expect((await draft(s, id)).body.data.document.sections[0]).toEqual({
        type: 'hero',
        title: `Legacy ${base} home`,
      });
      const pub = await published(s, id);
      expect(pub.status).toBe(200);
      expect(pub.body.data).toMatchObject({ kind: 'published', revision: 1 });
      expect(pub.body.data.document.sections[0].text).toBe(`Old ${base} banner`);
      const sch = await schema(s, id);
      expect(sch.body.data.base).toBe(base);
      expect(JSON.stringify(sch.body.data.schema)).toContain('"banner"');
      expect((await settings(s, id)).body.data.settings.primary_color).toBe('#123456');
    }
  });

  test.each(retired.map((b, i) => [b, i] as const))('%s: saves, previews (rendered) and publishes', async (base, i) => {
    const id = ids[i]!;
    const saved = await save(s, id, {
      expected_revision: 2,
      document: { sections: [{ type: 'banner', text: `Fresh ${base} banner` }] },
    });
    expect(saved.status).toBe(200);
    expect(saved.body.data.revision).toBe(3);
    const pv = await preview(s, id);
    expect(pv.status).toBe(201);
    const html = await page(pv.body.data.url);
    expect(html.status).toBe(200);
    expect(html.text).toContain(`Fresh ${base} banner`);
    expect(html.text).toContain(`data-theme-base="${base}"`);
    const pub = await publish(s, id, 3);
    expect(pub.status).toBe(200);
    expect(pub.body.data).toMatchObject({ base, base_retired: true, published: true, published_revision: 3 });
  });

  test('the fixture format checks every revision against its base schema, the settings, and one live theme', () => {
    const bad = (themes: unknown[]) => () => parseFixtures({ themes }, new Date());
    expect(bad([{ name: 'Bad', base: 'vault', revisions: [{ sections: [{ type: 'countdown' }] }] }])).toThrow(
      /\/themes\/0\/revisions\/0 sections\[0\]\.type must be one of: hero, text, product_grid, announcement, banner/,
    );
    expect(bad([{ name: 'Bad', base: 'apex', settings: { primary_color: 'red' } }])).toThrow(
      /\/themes\/0\/settings\/primary_color/,
    );
    expect(
      bad([
        { name: 'A', base: 'apex', published_revision: 1, live: true },
        { name: 'B', base: 'default', published_revision: 1, live: true },
      ]),
    ).toThrow(/at most one theme may be live/);
    expect(bad([{ name: 'C', base: 'default', published_revision: 2 }])).toThrow(/published_revision/);
    expect(bad([{ name: 'D', base: 'neon' }])).toThrow(FixtureError);
    expect(parseFixtures({ themes: retired.map((base) => ({ name: base, base })) }, new Date()).themes).toHaveLength(5);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('documents, schema and revisions', () => {
  test('a document that breaks the base schema is 422 with field paths, nothing changed', async () => {
    const s = await newShop();
    const id = await newTheme(s);
    const before = await world(s.id);
    const res = await save(s, id, {
      expected_revision: 1,
      document: {
        sections: [
          { type: 'hero' },
          { type: 'hero', title: 'Ok', color: 'red' },
          { type: 'countdown', label: 'Sale', ends_at: '2026-12-01T00:00:00Z' },
          { type: 'product_grid', columns: 9 },
        ],
        extra: true,
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    const fields = res.body.error.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(
      expect.arrayContaining([
        'document.sections[0].title',
        'document.sections[1].color',
        'document.sections[2].type',
        'document.sections[3].columns',
        'document.extra',
      ]),
    );
    expect(await world(s.id)).toEqual(before);
    // Not a sections array at all.
    const flat = await save(s, id, { expected_revision: 1, document: { sections: 'none' } });
    expect(flat.status).toBe(422);
    expect(flat.body.error.details).toEqual([{ field: 'document.sections', message: 'must be an array' }]);
    expect(await world(s.id)).toEqual(before);
  });

  test('each base has its own schema: a countdown is pulse-only, clean-minimal takes hero and text only', async () => {
    const s = await newShop();
    const pulse = await newTheme(s, 'pulse');
    const minimal = await newTheme(s, 'clean-minimal');
    const countdown = { sections: [{ type: 'countdown', label: 'Drop', ends_at: '2026-12-01T00:00:00Z' }] };
    expect((await save(s, pulse, { expected_revision: 1, document: countdown })).status).toBe(200);
    const refused = await save(s, minimal, { expected_revision: 1, document: countdown });
    expect(refused.status).toBe(422);
    expect(refused.body.error.details[0].field).toBe('document.sections[0].type');
    const grid = await save(s, minimal, { expected_revision: 1, document: { sections: [{ type: 'product_grid' }] } });
    expect(grid.status).toBe(422);
    const sch = await schema(s, minimal);
    expect(sch.status).toBe(200);
    expect(sch.body.data.schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(sch.body.data.schema.properties.sections.maxItems).toBe(20);
    expect(JSON.stringify(sch.body.data.schema)).not.toContain('product_grid');
  });

  test('save with the draft revision -> next revision; a stale save or publish is 409 and changes nothing', async () => {
    const s = await newShop();
    const id = await newTheme(s);
    const first = await draft(s, id);
    expect(first.body.data.revision).toBe(1);
    const saved = await save(s, id, { expected_revision: 1, document: doc('Second') });
    expect(saved.status).toBe(200);
    expect(saved.body.data).toMatchObject({ theme_id: id, kind: 'draft', revision: 2, document: doc('Second') });
    expect((await draft(s, id)).body.data).toMatchObject({ revision: 2, document: doc('Second') });

    const before = await world(s.id);
    const stale = await save(s, id, { expected_revision: 1, document: doc('Lost update') });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('REVISION_CONFLICT');
    expect(stale.body.error.message).toContain('revision 2');
    const ahead = await save(s, id, { expected_revision: 3, document: doc('Future') });
    expect(ahead.status).toBe(409);
    const stalePublish = await publish(s, id, 1);
    expect(stalePublish.status).toBe(409);
    expect(stalePublish.body.error.code).toBe('REVISION_CONFLICT');
    expect(await world(s.id)).toEqual(before);

    // Never published yet: the published document does not exist.
    const none = await published(s, id);
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('THEME_NOT_PUBLISHED');

    const pub = await publish(s, id, 2);
    expect(pub.status).toBe(200);
    expect(pub.body.data).toMatchObject({ id, published: true, revision: 2, published_revision: 2 });
    expect((await published(s, id)).body.data).toMatchObject({
      kind: 'published',
      revision: 2,
      document: doc('Second'),
    });

    // A later save changes the draft, not the published document; publishing the pre-save revision is stale.
    expect((await save(s, id, { expected_revision: 2, document: doc('Third') })).status).toBe(200);
    const beforeStale = await world(s.id);
    expect((await publish(s, id, 2)).status).toBe(409);
    expect(await world(s.id)).toEqual(beforeStale);
    expect((await published(s, id)).body.data.document).toEqual(doc('Second'));
    expect((await draft(s, id)).body.data.document).toEqual(doc('Third'));
  });

  test('publishing a theme takes the live spot from the shop’s other live theme', async () => {
    const s = await newShop();
    const a = await newTheme(s);
    const b = await newTheme(s, 'classic');
    expect((await publish(s, a, 1)).status).toBe(200);
    expect((await publish(s, b, 1)).status).toBe(200);
    const rows = (await list(s)).body.data as { id: string; published: boolean; published_revision: number | null }[];
    expect(rows.find((r) => r.id === a)).toMatchObject({ published: false, published_revision: 1 });
    expect(rows.find((r) => r.id === b)).toMatchObject({ published: true, published_revision: 1 });
  });

  test('writes are in the audit trail', async () => {
    const s = await newShop();
    const id = await newTheme(s);
    await save(s, id, { expected_revision: 1, document: doc('Audited') });
    await save(s, id, { expected_revision: 1, document: doc('Refused') });
    const entries = await t.db
      .selectFrom('audit_entries')
      .select(['operation_id', 'status', 'error_code'])
      .where('shop_id', '=', s.id)
      .orderBy('occurred_at')
      .execute();
    expect(entries.map((e) => [e.operation_id, e.status, e.error_code])).toEqual([
      ['createTheme', 201, null],
      ['saveThemeDocument', 200, null],
      ['saveThemeDocument', 409, 'REVISION_CONFLICT'],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('settings', () => {
  test('defaults of the base; a partial update keeps the others; null resets; bad ids or values 422', async () => {
    const s = await newShop();
    const id = await newTheme(s, 'pulse');
    const initial = await settings(s, id);
    expect(initial.status).toBe(200);
    expect(initial.body.data.settings).toMatchObject({ primary_color: '#e91e63', accent_color: '#ffc107' });
    clock.advance(1000);
    const res = await setSettings(s, id, { settings: { primary_color: '#000000', show_shop_name: false } });
    expect(res.status).toBe(200);
    expect(res.body.data.settings).toMatchObject({
      primary_color: '#000000',
      accent_color: '#ffc107',
      show_shop_name: false,
    });
    expect(res.body.data.updated_at).not.toBe(initial.body.data.updated_at);
    // Settings do not move the document revision.
    expect((await draft(s, id)).body.data.revision).toBe(1);
    const reset = await setSettings(s, id, { settings: { primary_color: null } });
    expect(reset.body.data.settings).toMatchObject({ primary_color: '#e91e63', show_shop_name: false });

    const before = await world(s.id);
    const bad = await setSettings(s, id, { settings: { primary_color: 'red', nope: 1, glow: 5 } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'settings.glow',
      'settings.nope',
      'settings.primary_color',
    ]);
    expect(await world(s.id)).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('preview sessions', () => {
  test('the URL renders the draft as escaped HTML with no external asset; only the token hash is stored', async () => {
    const s = await newShop();
    await t.seed(s.id, { products: [{ title: 'Gadget <b>', price: '12.50', type: 'SERVICE' }] });
    const id = await newTheme(s);
    const hostile = '<script>alert(1)</script> & "quotes"';
    expect(
      (
        await save(s, id, {
          expected_revision: 1,
          document: {
            meta: { title: 'Shop title' },
            sections: [
              { type: 'hero', title: hostile, button_label: 'Buy', button_link: '/products' },
              { type: 'text', heading: 'About', body: 'Para one.\n\nPara two.' },
              { type: 'product_grid', title: 'Our goods', limit: 3 },
            ],
          },
        })
      ).status,
    ).toBe(200);
    const res = await preview(s, id);
    expect(res.status).toBe(201);
    const session = res.body.data;
    expect(session).toMatchObject({ theme_id: id, revision: 2, created_at: clock.now().toISOString() });
    expect(session.id).toMatch(/^pvs_/);
    expect(new Date(session.expires_at).getTime() - new Date(session.created_at).getTime()).toBe(3600_000);
    expect(session.url).toMatch(/^http:\/\/api\.test\/theme-preview\/[A-Za-z0-9_-]{43}$/);

    const html = await page(session.url);
    expect(html.status).toBe(200);
    expect(html.headers['content-type']).toMatch(/text\/html/);
    expect(html.headers['content-security-policy']).toContain("default-src 'none'");
    expect(html.headers['cache-control']).toBe('no-store');
    expect(html.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;');
    expect(html.text).not.toMatch(/<script/i);
    expect(html.text).toContain('<p>Para one.</p><p>Para two.</p>');
    expect(html.text).toContain('Gadget &lt;b&gt;');
    expect(html.text).toContain('12.50');
    // Nothing loaded from elsewhere: no src attribute, no stylesheet link, no url() in the CSS.
    expect(html.text).not.toMatch(/\ssrc=|<link|url\(/i);

    const token = new URL(session.url).pathname.split('/').pop()!;
    const row = await t.db
      .selectFrom('theme_preview_sessions')
      .selectAll()
      .where('id', '=', session.id)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(token);
  });

  test('an older revision can be previewed; a revision the theme does not have is 422, nothing written', async () => {
    const s = await newShop();
    const id = await newTheme(s);
    await save(s, id, { expected_revision: 1, document: doc('Version two') });
    await save(s, id, { expected_revision: 2, document: doc('Version three') });
    const old = await preview(s, id, { revision: 2 });
    expect(old.status).toBe(201);
    expect(old.body.data.revision).toBe(2);
    const html = await page(old.body.data.url);
    expect(html.text).toContain('Version two');
    expect(html.text).not.toContain('Version three');
    const before = await world(s.id);
    const missing = await preview(s, id, { revision: 4 });
    expect(missing.status).toBe(422);
    expect(missing.body.error.details[0].field).toBe('revision');
    expect(await world(s.id)).toEqual(before);
  });

  test('the URL stops at expires_at (clock) and on DELETE: 410; unknown tokens 404; a second DELETE 404', async () => {
    const s = await newShop();
    const id = await newTheme(s);
    const expiring = (await preview(s, id)).body.data;
    const stopped = (await preview(s, id)).body.data;
    expect((await page(expiring.url)).status).toBe(200);

    const del = await stopPreview(s, id, stopped.id);
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({});
    const gone = await page(stopped.url);
    expect(gone.status).toBe(410);
    expect(gone.text).not.toContain('Welcome to our shop');
    const before = await world(s.id);
    const again = await stopPreview(s, id, stopped.id);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('PREVIEW_SESSION_NOT_FOUND');
    expect(await world(s.id)).toEqual(before);

    clock.advance(3600_000 - 1);
    expect((await page(expiring.url)).status).toBe(200);
    clock.advance(1);
    const expired = await page(expiring.url);
    expect(expired.status).toBe(410);
    expect(expired.text).not.toContain('Welcome to our shop');
    expect((await stopPreview(s, id, expiring.id)).status).toBe(404);

    expect((await request(t.app).get(`/theme-preview/${'A'.repeat(43)}`)).status).toBe(404);
    expect((await request(t.app).get('/theme-preview/short')).status).toBe(404);
  });

  test('a session of another theme of the shop is 404 PREVIEW_SESSION_NOT_FOUND, nothing changed', async () => {
    const s = await newShop();
    const a = await newTheme(s);
    const b = await newTheme(s);
    const session = (await preview(s, a)).body.data;
    const before = await world(s.id);
    const res = await stopPreview(s, b, session.id);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('PREVIEW_SESSION_NOT_FOUND');
    expect(await world(s.id)).toEqual(before);
    expect((await page(session.url)).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('tenancy, scopes, failures', () => {
  test('every {id} route with another shop’s theme (and session) is 404 THEME_NOT_FOUND, nothing changed', async () => {
    const a = await newShop();
    const b = await newShop();
    const id = await newTheme(a);
    const session = (await preview(a, id)).body.data;
    const before = await world(a.id);
    const calls = [
      settings(b, id),
      setSettings(b, id, { settings: { primary_color: '#000000' } }),
      published(b, id),
      draft(b, id),
      schema(b, id),
      save(b, id, { expected_revision: 1, document: doc('Hijack') }),
      preview(b, id),
      stopPreview(b, id, session.id),
      publish(b, id, 1),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('THEME_NOT_FOUND');
    }
    expect(await world(a.id)).toEqual(before);
    expect((await list(b)).body.data).toEqual([]);
    expect((await page(session.url)).status).toBe(200);
  });

  test('scopes: themes.read reads only, themes.write writes only, other scopes nothing', async () => {
    const s = await newShop();
    const id = await newTheme(s);
    const read = (await t.createKey(s.id, ['themes.read'])).key;
    const write = (await t.createKey(s.id, ['themes.write'])).key;
    const other = (await t.createKey(s.id, ['products.read', 'store.write'])).key;
    const reads = (key: string) => [
      list(s, {}, key),
      settings(s, id, key),
      draft(s, id, key),
      published(s, id, key),
      schema(s, id, key),
    ];
    const writes = (key: string) => [
      create(s, { name: 'Scoped', base: 'default' }, key),
      setSettings(s, id, { settings: { primary_color: '#111111' } }, key),
      save(s, id, { expected_revision: 99, document: doc('x') }, key),
      preview(s, id, {}, key),
      stopPreview(s, id, 'pvs_0', key),
      publish(s, id, 99, key),
    ];
    const statuses = async (calls: PromiseLike<{ status: number }>[]) =>
      (await Promise.all(calls)).map((r) => r.status);
    // published: 404 THEME_NOT_PUBLISHED (the theme was never published) — allowed, not 403.
    expect(await statuses(reads(read))).toEqual([200, 200, 200, 404, 200]);
    expect(await statuses(writes(read))).toEqual([403, 403, 403, 403, 403, 403]);
    expect(await statuses(reads(write))).toEqual([403, 403, 403, 403, 403]);
    expect(await statuses(writes(write))).toEqual([201, 200, 409, 201, 404, 409]);
    expect(await statuses([...reads(other), ...writes(other)])).toEqual(Array(11).fill(403));
  });

  test('a broken database while reading is the 500 envelope, logged', async () => {
    const s = await newShop();
    const id = await newTheme(s);
    await sql`delete from theme_revisions where shop_id = ${s.id} and theme_id = ${id}`.execute(t.db);
    const logged = t.logs.length;
    const res = await draft(s, id);
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('INTERNAL_ERROR');
    expect(JSON.stringify(res.body)).not.toContain('revision 1');
    const lines = t.logs.slice(logged).filter((l) => l.level === 'error' || l.level === 50 || l.msg !== 'request');
    expect(JSON.stringify(lines)).toContain(`theme ${id} has no revision 1`);
    // Publishing the same broken theme fails the same way, and writes nothing.
    const before = await world(s.id);
    expect((await publish(s, id, 1)).status).toBe(500);
    expect(await world(s.id)).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------------------------

describe('races (real PostgreSQL)', () => {
  pgOnly('ten saves on one revision at once: exactly one 200, nine 409, the revision moves by one', async () => {
    const s = await newShop();
    const id = await newTheme(s);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => save(s, id, { expected_revision: 1, document: doc(`Racer ${i}`) })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, ...Array(9).fill(409)]);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('REVISION_CONFLICT');
    const winner = results.find((r) => r.status === 200)!;
    const current = await draft(s, id);
    expect(current.body.data.revision).toBe(2);
    expect(current.body.data.document).toEqual(winner.body.data.document);
    const revisions = await t.db.selectFrom('theme_revisions').select('revision').where('theme_id', '=', id).execute();
    expect(revisions.map((r) => r.revision).sort()).toEqual([1, 2]);
  });

  pgOnly(
    'a save and a publish on one revision at once: never a publish of a revision that is no longer the draft',
    async () => {
      const s = await newShop();
      const id = await newTheme(s);
      const [saved, pub] = await Promise.all([
        save(s, id, { expected_revision: 1, document: doc('Raced') }),
        publish(s, id, 1),
      ]);
      expect(saved.status).toBe(200);
      expect([200, 409]).toContain(pub.status);
      const row = await t.db.selectFrom('themes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      expect(row.revision).toBe(2);
      expect(row.published_revision).toBe(pub.status === 200 ? 1 : null);
    },
  );

  pgOnly('two themes published at once: both succeed one after the other, exactly one ends live', async () => {
    const s = await newShop();
    const themes = [await newTheme(s), await newTheme(s), await newTheme(s)];
    const results = await Promise.all(themes.map((id) => publish(s, id, 1)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const live = await t.db
      .selectFrom('themes')
      .select('id')
      .where('shop_id', '=', s.id)
      .where('live', '=', true)
      .execute();
    expect(live).toHaveLength(1);
  });
});

// Store settings through HTTP: branding and layout (documented defaults before any write, full replacement, the
// checks beyond the schema, lower-case colours), additional domains (plan feature, the TXT record to publish,
// hostname rules, duplicates in the shop and VERIFIED elsewhere, a FAILED hostname added again, the cursor list),
// the scopes, another shop's domain id (404), and the fixture format. Every refusal is checked for what it did not
// change (settings rows, domain rows, audit lines of accepted writes). The DNS side of verification is in
// domain-verification.test.ts; races on real PostgreSQL.
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

const clock = new ManualClock(new Date('2026-11-20T10:00:00Z'));
let t: TestApp;

beforeAll(async () => {
  // A closed port: a verification that reached the DNS here would answer DNS_UNAVAILABLE, never look outside.
  t = await startTestApp({
    clock,
    env: { RATE_LIMIT_FREE: '100000', RATE_LIMIT_PRO: '100000', DNS_SERVERS: '127.0.0.1:9' },
  });
});
afterAll(() => t.close());

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
let unique = 0;
const uid = () => `${Date.now().toString(36)}${(++unique).toString(36)}`;

interface Shop {
  id: string;
  key: string;
  name: string;
}

async function newShop(plan: 'free' | 'pro' | 'business' = 'pro'): Promise<Shop> {
  const name = `Store ${uid()}`;
  const id = await t.createShop({ name, plan, currency: 'USD' });
  const key = (await t.createKey(id, ['*'])).key;
  return { id, key, name };
}

const branding = {
  name: 'Ada Lovelace Store',
  logo_url: 'https://cdn.example.com/images/logo.png',
  favicon_url: 'https://cdn.example.com/images/favicon.ico',
  primary_color: '#1A73E8',
  accent_color: '#ff6d00',
  support_email: 'support@example.com',
};

const layout = {
  product_grid_columns: 4,
  show_search: false,
  show_categories: true,
  show_reviews: false,
  announcement: 'Free delivery this week',
  footer_links: [
    { url: 'https://example.com/terms', label: 'Terms' },
    { url: 'http://example.com/faq', label: 'FAQ' },
  ],
};

const getBranding = (s: Shop, key = s.key) => t.http.get('/dev/v1/store/branding').set(bearer(key));
const putBranding = (s: Shop, body: unknown, key = s.key) =>
  t.http
    .put('/dev/v1/store/branding')
    .set(bearer(key))
    .send(body as object);
const getLayout = (s: Shop, key = s.key) => t.http.get('/dev/v1/store/layout').set(bearer(key));
const putLayout = (s: Shop, body: unknown, key = s.key) =>
  t.http
    .put('/dev/v1/store/layout')
    .set(bearer(key))
    .send(body as object);
const listDomains = (s: Shop, query: Record<string, string | number> = {}, key = s.key) =>
  t.http.get('/dev/v1/store/domains/additional').query(query).set(bearer(key));
const addDomain = (s: Shop, domain: unknown, key = s.key) =>
  t.http.post('/dev/v1/store/domains/additional').set(bearer(key)).send({ domain });
const verify = (s: Shop, id: string, key = s.key) =>
  t.http.post(`/dev/v1/store/domains/additional/${id}/verification`).set(bearer(key)).send();

const settingsRows = (s: Shop) => t.db.selectFrom('store_settings').selectAll().where('shop_id', '=', s.id).execute();
const domainRows = (s: Shop) =>
  t.db.selectFrom('store_domains').selectAll().where('shop_id', '=', s.id).orderBy('created_at').execute();
/** The audit trail's accepted store writes (refusals are recorded too, with their 4xx status). */
const auditActions = async (s: Shop) =>
  (
    await t.db
      .selectFrom('audit_entries')
      .select('action')
      .where('shop_id', '=', s.id)
      .where('action', 'like', 'store.%')
      .where('status', '<', 300)
      .orderBy('occurred_at')
      .execute()
  ).map((r) => r.action);

describe('branding', () => {
  test('a shop that never wrote it reads the documented defaults, dated from the shop', async () => {
    const s = await newShop();
    const shop = await t.db.selectFrom('shops').select('created_at').where('id', '=', s.id).executeTakeFirstOrThrow();
    const res = await getBranding(s);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      name: s.name,
      logo_url: null,
      favicon_url: null,
      primary_color: '#1a73e8',
      accent_color: '#ff6d00',
      support_email: null,
      updated_at: shop.created_at.toISOString(),
    });
    expect(await settingsRows(s)).toEqual([]); // a read writes nothing
  });

  test('PUT replaces every field; colours come back in lower case; GET reads it back; an audit line', async () => {
    const s = await newShop();
    clock.set('2026-11-21T08:00:00Z');
    const res = await putBranding(s, branding);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      ...branding,
      primary_color: '#1a73e8',
      updated_at: '2026-11-21T08:00:00.000Z',
    });
    expect((await getBranding(s)).body.data).toEqual(res.body.data);
    // Nulls clear the optional fields.
    const cleared = await putBranding(s, { ...branding, logo_url: null, favicon_url: null, support_email: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).toMatchObject({ logo_url: null, favicon_url: null, support_email: null });
    expect(await auditActions(s)).toEqual(['store.update_branding', 'store.update_branding']);
    // The layout is untouched by a branding write: still the defaults.
    expect((await getLayout(s)).body.data).toMatchObject({ product_grid_columns: 3, footer_links: [] });
  });

  test.each([
    ['a field left out (no partial update)', { ...branding, support_email: undefined }, 'support_email'],
    ['a colour that is not #rrggbb', { ...branding, primary_color: 'blue' }, 'primary_color'],
    ['a 3-digit colour', { ...branding, accent_color: '#fff' }, 'accent_color'],
    ['an http logo', { ...branding, logo_url: 'http://cdn.example.com/logo.png' }, 'logo_url'],
    ['a javascript: favicon', { ...branding, favicon_url: 'javascript:alert(1)' }, 'favicon_url'],
    ['a logo URL with a password', { ...branding, logo_url: 'https://u:p@cdn.example.com/l.png' }, 'logo_url'],
    ['a blank name', { ...branding, name: '   ' }, 'name'],
    ['an empty name', { ...branding, name: '' }, 'name'],
    ['a bad email', { ...branding, support_email: 'not-an-email' }, 'support_email'],
    ['an unknown field', { ...branding, logo_id: 'img_1' }, 'logo_id'],
  ])('PUT refuses %s with 422 on the field, changing nothing', async (_name, body, field) => {
    const s = await newShop();
    // Once before any write (no row may appear) and once after one (the row must stay).
    const before = await putBranding(s, { ...body, name: 'x' }).then(() => settingsRows(s));
    const res = await putBranding(s, body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(JSON.stringify(res.body.error.details)).toContain(field);
    expect(await settingsRows(s)).toEqual(before);
    const fresh = await newShop();
    expect((await putBranding(fresh, body)).status).toBe(422);
    expect(await settingsRows(fresh)).toEqual([]);
    expect(await auditActions(fresh)).toEqual([]);
  });
});

describe('layout', () => {
  test('defaults, then a full replacement read back; "" announcement is stored as null', async () => {
    const s = await newShop();
    const shop = await t.db.selectFrom('shops').select('created_at').where('id', '=', s.id).executeTakeFirstOrThrow();
    expect((await getLayout(s)).body.data).toEqual({
      product_grid_columns: 3,
      show_search: true,
      show_categories: true,
      show_reviews: true,
      announcement: null,
      footer_links: [],
      updated_at: shop.created_at.toISOString(),
    });
    clock.set('2026-11-22T09:30:00Z');
    const res = await putLayout(s, layout);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ ...layout, updated_at: '2026-11-22T09:30:00.000Z' });
    expect((await getLayout(s)).body.data).toEqual(res.body.data);
    const blank = await putLayout(s, { ...layout, announcement: '', footer_links: [] });
    expect(blank.body.data).toMatchObject({ announcement: null, footer_links: [] });
    // The branding is untouched by a layout write.
    expect((await getBranding(s)).body.data).toMatchObject({ name: s.name, primary_color: '#1a73e8' });
    expect(await auditActions(s)).toEqual(['store.update_layout', 'store.update_layout']);
  });

  test.each([
    ['a field left out', { ...layout, show_reviews: undefined }, 'show_reviews'],
    ['7 columns', { ...layout, product_grid_columns: 7 }, 'product_grid_columns'],
    ['0 columns', { ...layout, product_grid_columns: 0 }, 'product_grid_columns'],
    ['an ftp footer link', { ...layout, footer_links: [{ url: 'ftp://x.example.com/a', label: 'A' }] }, 'footer_links'],
    [
      'a footer link with a user',
      { ...layout, footer_links: [{ url: 'https://me@x.example.com/a', label: 'A' }] },
      'footer_links[0].url',
    ],
    [
      'a blank label',
      { ...layout, footer_links: [{ url: 'https://x.example.com', label: ' ' }] },
      'footer_links[0].label',
    ],
    ['21 footer links', { ...layout, footer_links: Array(21).fill(layout.footer_links[0]) }, 'footer_links'],
    ['a 501-character announcement', { ...layout, announcement: 'a'.repeat(501) }, 'announcement'],
  ])('PUT refuses %s with 422, changing nothing', async (_name, body, field) => {
    const s = await newShop();
    expect((await putLayout(s, layout)).status).toBe(200);
    const before = await settingsRows(s);
    const res = await putLayout(s, body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(JSON.stringify(res.body.error.details)).toContain(field);
    expect(await settingsRows(s)).toEqual(before);
    const fresh = await newShop();
    expect((await putLayout(fresh, body)).status).toBe(422);
    expect(await settingsRows(fresh)).toEqual([]);
  });
});

describe('scopes', () => {
  test('store.read reads but cannot write; store.write writes but cannot read; no scope implies another', async () => {
    const s = await newShop();
    const read = (await t.createKey(s.id, ['store.read'])).key;
    const write = (await t.createKey(s.id, ['store.write'])).key;
    const other = (await t.createKey(s.id, ['products.read'])).key;
    expect((await getBranding(s, read)).status).toBe(200);
    expect((await getLayout(s, read)).status).toBe(200);
    expect((await listDomains(s, {}, read)).status).toBe(200);
    for (const res of [
      await putBranding(s, branding, read),
      await putLayout(s, layout, read),
      await addDomain(s, 'scope.example.com', read),
      await getBranding(s, write),
      await getLayout(s, write),
      await listDomains(s, {}, write),
      await getBranding(s, other),
      await putLayout(s, layout, other),
    ])
      expect(res.status).toBe(403);
    expect(await settingsRows(s)).toEqual([]);
    expect(await domainRows(s)).toEqual([]);
    expect((await putBranding(s, branding, write)).status).toBe(200);
    expect((await putLayout(s, layout, write)).status).toBe(200);
    expect((await addDomain(s, 'scope.example.com', write)).status).toBe(201);
  });
});

describe('additional domains', () => {
  test('adding returns the TXT record to publish, with an unguessable value; the row stores it', async () => {
    const s = await newShop();
    clock.set('2026-11-22T03:10:00Z');
    const res = await addDomain(s, 'Shop.Example.COM.');
    expect(res.status).toBe(201);
    const d = res.body.data;
    expect(d).toEqual({
      id: expect.stringMatching(/^dom_[0-9a-f]{32}$/),
      domain: 'shop.example.com',
      status: 'PENDING_VERIFICATION',
      verification: {
        type: 'TXT',
        name: '_mdapi-verification.shop.example.com',
        value: expect.stringMatching(/^mdapi-verification=[A-Za-z0-9_-]{32}$/),
      },
      ssl_status: 'PENDING',
      verified_at: null,
      last_checked_at: null,
      last_check_error: null,
      created_at: '2026-11-22T03:10:00.000Z',
    });
    const other = await addDomain(s, 'www.example.com');
    expect(other.body.data.verification.value).not.toBe(d.verification.value);
    const [row] = await domainRows(s);
    expect(row).toMatchObject({ id: d.id, record_value: d.verification.value, shop_id: s.id });
    expect(await auditActions(s)).toEqual(['store.add_domain', 'store.add_domain']);
  });

  test('the list: newest first, cursor pages, empty for a shop without domains', async () => {
    const s = await newShop();
    expect((await listDomains(s)).body).toEqual({ data: [], pagination: { next_cursor: null, has_more: false } });
    const ids: string[] = [];
    for (const [i, name] of ['a.example.com', 'b.example.com', 'c.example.com'].entries()) {
      clock.set(new Date(Date.UTC(2026, 10, 22, 4, i)));
      ids.push((await addDomain(s, name)).body.data.id);
    }
    const first = await listDomains(s, { limit: 2 });
    expect(first.status).toBe(200);
    expect(first.body.data.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.pagination.has_more).toBe(true);
    const second = await listDomains(s, { limit: 2, cursor: first.body.pagination.next_cursor });
    expect(second.body.data.map((d: { id: string }) => d.id)).toEqual([ids[0]]);
    expect(second.body.pagination).toEqual({ next_cursor: null, has_more: false });
    // Another shop's cursor is refused.
    const other = await newShop();
    const foreign = await listDomains(other, { cursor: first.body.pagination.next_cursor });
    expect(foreign.status).toBe(422);
  });

  test('a plan without customDomains: 400 FEATURE_NOT_AVAILABLE, nothing written', async () => {
    const s = await newShop('free');
    const res = await addDomain(s, 'free.example.com');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('FEATURE_NOT_AVAILABLE');
    expect(await domainRows(s)).toEqual([]);
    expect(await auditActions(s)).toEqual([]);
  });

  test.each([
    ['an IP address', '192.0.2.10'],
    ['a single label', 'localhost'],
    ['a name under localhost', 'shop.localhost'],
    ['a numeric top-level label', 'shop.123'],
    ['an underscore', 'my_shop.example.com'],
    ['a space', 'my shop.example.com'],
    ['a number', 12],
  ])('refuses %s with 422 on domain, nothing written', async (_name, domain) => {
    const s = await newShop();
    const res = await addDomain(s, domain);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(JSON.stringify(res.body.error.details)).toContain('domain');
    expect(await domainRows(s)).toEqual([]);
  });

  test('duplicates: the same hostname twice in a shop is 409; another shop may add it while pending', async () => {
    const s = await newShop();
    const first = await addDomain(s, 'dup.example.com');
    expect(first.status).toBe(201);
    const again = await addDomain(s, 'DUP.example.com');
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
    expect((await domainRows(s)).map((r) => r.id)).toEqual([first.body.data.id]);
    const other = await newShop();
    const theirs = await addDomain(other, 'dup.example.com');
    expect(theirs.status).toBe(201);
    expect(theirs.body.data.verification.value).not.toBe(first.body.data.verification.value);
  });

  test('a hostname VERIFIED by another shop is 409 for everyone else, nothing written', async () => {
    const owner = await newShop();
    await t.seed(owner.id, { store_domains: [{ domain: 'owned.example.com', status: 'VERIFIED' }] });
    const s = await newShop();
    const res = await addDomain(s, 'owned.example.com');
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    expect(res.body.error.message).toContain('another shop');
    expect(await domainRows(s)).toEqual([]);
    // The owner itself: already in its shop.
    expect((await addDomain(owner, 'owned.example.com')).status).toBe(409);
  });

  test('a FAILED hostname added again starts over: new id and token; the failed one is gone', async () => {
    const s = await newShop();
    const seeded = await t.seed(s.id, { store_domains: [{ domain: 'retry.example.com', status: 'FAILED' }] });
    const oldId = seeded.storeDomains[0]!;
    const oldRow = (await domainRows(s))[0]!;
    const failed = await verify(s, oldId);
    expect(failed.status).toBe(200);
    expect(failed.body.data).toMatchObject({
      id: oldId,
      status: 'FAILED',
      ssl_status: 'FAILED',
      last_checked_at: null,
    });
    const res = await addDomain(s, 'retry.example.com');
    expect(res.status).toBe(201);
    expect(res.body.data.id).not.toBe(oldId);
    expect(res.body.data.status).toBe('PENDING_VERIFICATION');
    expect(res.body.data.verification.value).not.toBe(oldRow.record_value);
    expect((await verify(s, oldId)).status).toBe(404);
    expect((await domainRows(s)).map((r) => r.id)).toEqual([res.body.data.id]);
  });

  test("verification of an unknown id or another shop's id: 404 DOMAIN_NOT_FOUND, nothing changed", async () => {
    const a = await newShop();
    const b = await newShop();
    const theirs = (await addDomain(b, 'theirs.example.com')).body.data.id as string;
    const before = await domainRows(b);
    for (const res of [await verify(a, theirs), await verify(a, 'dom_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f')]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('DOMAIN_NOT_FOUND');
    }
    expect(await domainRows(b)).toEqual(before);
    expect(await domainRows(a)).toEqual([]);
    // And the owner's list is the only place it appears.
    expect((await listDomains(a)).body.data).toEqual([]);
  });

  pgOnly('race: the same hostname added twice at once in one shop: one 201, one 409, one row', async () => {
    const s = await newShop();
    const results = await Promise.all([addDomain(s, 'race.example.com'), addDomain(s, 'race.example.com')]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(await domainRows(s)).toHaveLength(1);
  });

  pgOnly(
    "race: a shop's first branding writes at once all succeed, one after the other (one row, the last one wins)",
    async () => {
      // Many rounds: two first inserts meet in a narrow window (test/db/singleton-rows.test.ts holds the insert to
      // it with more writers); where they met on the primary key, one of them answered 409 CONFLICT.
      const names = ['First', 'Second', 'Third'];
      for (let round = 0; round < 30; round++) {
        const s = await newShop();
        const results = await Promise.all(names.map((name) => putBranding(s, { ...branding, name })));
        expect(results.map((r) => [r.status, r.body.error?.code])).toEqual(names.map(() => [200, undefined]));
        const rows = await settingsRows(s);
        expect(rows).toHaveLength(1);
        expect(names).toContain(rows[0]!.name);
      }
    },
  );
});

describe('fixtures', () => {
  test('branding, layout (partial: the rest keep their defaults) and domains in any status', async () => {
    const s = await newShop('free'); // fixtures set a shop up: the plan gates the API, not the operator
    const seeded = await t.seed(
      s.id,
      parseFixtures(
        {
          store_branding: { name: 'Seeded', primary_color: '#ABCDEF', logo_url: 'https://cdn.example.com/l.png' },
          store_layout: { product_grid_columns: 2, footer_links: [{ url: 'https://example.com/x', label: 'X' }] },
          store_domains: [
            { domain: 'pending.example.com' },
            { domain: 'Verified.Example.com', status: 'VERIFIED', created_at: '2026-11-01T00:00:00Z' },
            { domain: 'failed.example.com', status: 'FAILED' },
          ],
        },
        new Date(),
      ),
    );
    expect(seeded.storeDomains).toHaveLength(3);
    expect((await getBranding(s)).body.data).toMatchObject({
      name: 'Seeded',
      primary_color: '#abcdef',
      accent_color: '#ff6d00',
      logo_url: 'https://cdn.example.com/l.png',
      favicon_url: null,
    });
    expect((await getLayout(s)).body.data).toMatchObject({
      product_grid_columns: 2,
      show_search: true,
      footer_links: [{ url: 'https://example.com/x', label: 'X' }],
    });
    const list = (await listDomains(s)).body.data as { domain: string; status: string; verified_at: string | null }[];
    expect(list.map((d) => [d.domain, d.status]).sort()).toEqual([
      ['failed.example.com', 'FAILED'],
      ['pending.example.com', 'PENDING_VERIFICATION'],
      ['verified.example.com', 'VERIFIED'],
    ]);
    expect(list.find((d) => d.status === 'VERIFIED')!.verified_at).toBe('2026-11-01T00:00:00.000Z');
  });

  test.each([
    ['a bad colour', { store_branding: { primary_color: 'red' } }, '/store_branding/primary_color'],
    ['an http logo', { store_branding: { logo_url: 'http://x.example.com/l.png' } }, '/store_branding/logo_url'],
    ['a blank name', { store_branding: { name: ' ' } }, '/store_branding/name'],
    ['8 columns', { store_layout: { product_grid_columns: 8 } }, '/store_layout/product_grid_columns'],
    [
      'a footer link with a password',
      { store_layout: { footer_links: [{ url: 'https://a:b@x.example.com', label: 'X' }] } },
      '/store_layout/footer_links/0/url',
    ],
    ['an IP domain', { store_domains: [{ domain: '10.0.0.1' }] }, '/store_domains/0/domain'],
    [
      'a domain twice',
      { store_domains: [{ domain: 'a.example.com' }, { domain: 'A.example.com' }] },
      '/store_domains/1/domain duplicates',
    ],
    [
      'an unknown status',
      { store_domains: [{ domain: 'a.example.com', status: 'ACTIVE' }] },
      '/store_domains/0/status',
    ],
  ])('parseFixtures refuses %s', (_name, value, message) => {
    expect(() => parseFixtures(value, new Date())).toThrow(FixtureError);
    expect(() => parseFixtures(value, new Date())).toThrow(message);
  });

  test('a seed that breaks a rule against the database rolls back whole', async () => {
    const owner = await newShop();
    await t.seed(owner.id, { store_domains: [{ domain: 'taken.example.com', status: 'VERIFIED' }] });
    const s = await newShop();
    await expect(
      t.seed(
        s.id,
        parseFixtures(
          {
            store_branding: { name: 'Never' },
            store_domains: [{ domain: 'fine.example.com' }, { domain: 'taken.example.com', status: 'VERIFIED' }],
          },
          new Date(),
        ),
      ),
    ).rejects.toThrow('/store_domains/1/domain taken.example.com is already verified by another shop');
    expect(await settingsRows(s)).toEqual([]);
    expect(await domainRows(s)).toEqual([]);
  });
});

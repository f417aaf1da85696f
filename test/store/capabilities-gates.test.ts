// Every flag GET /me/capabilities reports under `features` gates the behaviour it names (issue 24, point 8). The
// flags are read from the response, not listed here: a flag with no behaviour check below fails this file, and so
// does a flag no plan has false (or none true), which could gate nothing. For each flag, on every plan, the request
// it names succeeds where the flag is true and is refused with 400 FEATURE_NOT_AVAILABLE, writing nothing, where
// it is false.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../../db/tables';
import { plans, type Plan } from '../../src/config';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;

interface Shop {
  id: string;
  key: string;
  plan: Plan;
}

/** What a refused request must not have written in the shop. */
async function shopRows(db: Kysely<Database>, shopId: string, tables: string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of tables) {
    const { rows } = await sql<{ n: string }>`select count(*)::text as n from ${sql.table(table)}
      where shop_id = ${shopId}`.execute(db);
    out[table] = Number(rows[0]!.n);
  }
  return out;
}

async function expectRefused(shop: Shop, res: { status: number; body: any }, feature: string) {
  expect([res.status, res.body.error?.code]).toEqual([400, 'FEATURE_NOT_AVAILABLE']);
  // The message names the feature, the shop's plan and the plans that have it.
  expect(res.body.error.message).toContain(feature);
  expect(res.body.error.message).toContain(`The ${shop.plan} plan`);
}

/** The behaviour each flag claims, checked on a shop where it is `enabled` (true) or not. */
const behaviours: Record<string, (shop: Shop, enabled: boolean) => Promise<void>> = {
  // "Hosted checkout can open directly on a coin or network": POST /payments with crypto_gateway.
  async nativeCryptoCheckout(shop, enabled) {
    const tables = ['orders', 'customers', 'events', 'payment_attempts', 'webhook_deliveries', 'outbound_emails'];
    const pay = (body: object) => t.http.post('/dev/v1/payments').set(bearer(shop.key)).send(body);
    const before = await shopRows(t.db, shop.id, tables);
    const coin = {
      title: 'Coin',
      email: `buyer-${shop.plan}@example.com`,
      value: 25,
      currency: 'USD',
      gateway: 'CRYPTO',
      crypto_gateway: 'BTC',
    };
    const res = await pay(coin);
    if (enabled) {
      expect(res.status).toBe(201);
      const url = new URL(res.body.data.url);
      expect(url.searchParams.get('selected_gateway')).toBe('BTC');
      expect(url.searchParams.get('auto_start_crypto')).toBe('1');
    } else {
      await expectRefused(shop, res, 'nativeCryptoCheckout');
      expect(await shopRows(t.db, shop.id, tables)).toEqual(before);
      // Refused before the gateway and the coin are looked at: the answer is about the plan, whatever else is wrong.
      await expectRefused(
        shop,
        await pay({ ...coin, gateway: 'NO_SUCH_GATEWAY', crypto_gateway: 'DOGE' }),
        'nativeCryptoCheckout',
      );
      expect(await shopRows(t.db, shop.id, tables)).toEqual(before);
    }
    // Without crypto_gateway a crypto gateway is open to every plan: the buyer picks the coin at checkout.
    const plain = await pay({ title: 'Coin', value: 25, currency: 'USD', gateway: 'CRYPTO' });
    expect(plain.status).toBe(201);
    expect(new URL(plain.body.data.url).searchParams.has('auto_start_crypto')).toBe(false);
  },
  // "Additional storefront domains can be added": POST /store/domains/additional.
  async customDomains(shop, enabled) {
    const tables = ['store_domains', 'audit_entries'];
    const before = await shopRows(t.db, shop.id, tables);
    const res = await t.http
      .post('/dev/v1/store/domains/additional')
      .set(bearer(shop.key))
      .send({ domain: `${shop.plan}.shop.example.com` });
    if (enabled) {
      expect(res.status).toBe(201);
      expect(res.body.data.domain).toBe(`${shop.plan}.shop.example.com`);
    } else {
      await expectRefused(shop, res, 'customDomains');
      // No domain; only the audit entry every refused write leaves.
      expect(await shopRows(t.db, shop.id, tables)).toEqual({ ...before, audit_entries: before.audit_entries! + 1 });
    }
  },
};

const shops: Shop[] = [];
const reported = new Map<Plan, Record<string, boolean>>();

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_FREE: '100000' } });
  for (const plan of plans) {
    const id = await t.createShop({ name: `Plan ${plan}`, plan });
    const key = (await t.createKey(id, ['*'])).key;
    await t.seed(id, { gateways: [{ code: 'CRYPTO', kind: 'CRYPTO', coins: ['BTC', 'ETH'] }] });
    shops.push({ id, key, plan });
    const caps = await t.http.get('/dev/v1/me/capabilities').set(bearer(key));
    expect(caps.status).toBe(200);
    expect(caps.body.data.plan).toBe(plan);
    reported.set(plan, caps.body.data.features);
  }
});
afterAll(() => t?.close());

test('every reported flag has a behaviour check, and every check a reported flag', () => {
  for (const plan of plans) expect(Object.keys(reported.get(plan)!).sort()).toEqual(Object.keys(behaviours).sort());
});

test('every reported flag is false on some plan and true on another (a flag that never changes gates nothing)', () => {
  for (const flag of Object.keys(behaviours)) {
    const values = plans.map((p) => reported.get(p)![flag]);
    expect([flag, values.includes(false), values.includes(true)]).toEqual([flag, true, true]);
  }
});

describe.each(plans)('on the %s plan, each flag holds', (plan) => {
  test.each(Object.keys(behaviours))('%s', async (flag) => {
    const shop = shops.find((s) => s.plan === plan)!;
    const enabled = reported.get(plan)![flag];
    expect(typeof enabled).toBe('boolean');
    await behaviours[flag]!(shop, enabled!);
  });
});

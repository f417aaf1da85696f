// Regressions of the bugs the contract fuzz (contract-fuzz.test.ts) found, each as the smallest request that showed
// it. Every response goes through the contract validator (t.http), which is what most of them broke.
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = await startTestApp();
  const shop = await t.createShop();
  key = (await t.createKey(shop, ['*'])).key;
});
afterAll(() => t.close());

describe('a body sent to an operation that takes none', () => {
  // Found as listInvoices -> 413: the reads declare no 413 or 415, so such a body is refused as what it is, 422.
  test('over 1 MiB: 422 "takes no request body" (not an undeclared 413), connection closed', async () => {
    const res = await t.http
      .get('/dev/v1/invoices')
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send('x'.repeat(1_100_000))
      .ok(() => true);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'body', message: 'this operation takes no request body' }]);
  });

  test('of a media type no operation takes: 422, not an undeclared 415', async () => {
    const res = await t.http.get('/dev/v1/me').set(bearer(key)).set('Content-Type', 'application/xml').send('<a/>');
    expect(res.status).toBe(422);
    expect(res.body.error.details).toEqual([{ field: 'body', message: 'this operation takes no request body' }]);
  });

  test('a write without a body still answers 415, which it declares', async () => {
    const typed = await t.http
      .post('/dev/v1/products/prod_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f/duplicate')
      .set(bearer(key))
      .set('Content-Type', 'application/xml')
      .send('<a/>');
    expect(typed.status).toBe(415);
  });
});

// Found as getAffiliatePerformance?to=0 -> 200 with negative `from`s: the default start (`to` minus 30 days) went
// before the epoch, and the contract's periods are Unix seconds >= 0.
test('affiliate performance: the default start is clamped at the epoch', async () => {
  const shop = await t.createShop();
  const shopKey = (await t.createKey(shop, ['affiliates.read'])).key;
  await t.seed(shop, {
    customers: [{ email: 'ada@example.com', affiliate: { code: 'ADA', commission_percent: '10' } }],
  });
  const affiliate = await t.db
    .selectFrom('customers')
    .select('id')
    .where('shop_id', '=', shop)
    .executeTakeFirstOrThrow();
  const url = `/dev/v1/affiliates/customers/${affiliate.id}/performance`;
  const atEpoch = await t.http.get(`${url}?to=0`).set(bearer(shopKey));
  expect(atEpoch.status).toBe(422);
  expect(atEpoch.body.error.details[0].field).toBe('query.from');
  const early = await t.http.get(`${url}?to=86400&interval=week`).set(bearer(shopKey));
  expect(early.status).toBe(200);
  expect(early.body.data.from).toBe(0);
  expect(early.body.data.periods).toHaveLength(1);
});

// Found as updateMessagingBotNotifications with 1001 bad user_ids -> 422 listing 1002 details, over the contract's
// bound of 1000 (ErrorObject.details maxItems).
test('a 422 lists at most 1000 details, however many values are bad', async () => {
  const res = await t.http
    .put('/dev/v1/telegram/bots/bot_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f/users/bulk/notifications')
    .set(bearer(key))
    .send({ notifications: { stock_low: false }, user_ids: Array.from({ length: 1001 }, () => 'x') });
  expect(res.status).toBe(422);
  expect(res.body.error.details).toHaveLength(1000);
  expect(res.body.error.details[0]).toEqual({ field: 'user_ids', message: 'must contain at most 1000 items' });
});

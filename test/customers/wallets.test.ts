// POST /customers/{id}/wallet/credit and /debit: a ledger row per movement, the customer's cached balance equal to
// the ledger's sum after every test, amounts in the wallet currency's minor unit, INSUFFICIENT_FUNDS against the
// available balance (balance minus held); every refusal checked for what it did not write (ledger rows, balance,
// events); another shop's customer is 404; 100 concurrent credits and debits on real PostgreSQL.
import Decimal from 'decimal.js';
import { sql, type Kysely } from 'kysely';
import { walletLedgerSum } from '../../db/queries/wallets';
import { NotFoundError, ValidationError } from '../../src/errors';
import { ManualClock } from '../../src/platform/clock';
import { postWalletMovement } from '../../src/domain/customers/wallets';
import { Effects, shopWrite } from '../../src/platform/unit-of-work';
import * as m0011 from '../../db/migrations/0011_wallets';
import * as m0012 from '../../db/migrations/0012_affiliates';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';
import { shopPair } from '../helpers/shop-pair';

let t: TestApp;
let clock: ManualClock;
let shopA: string;
let shopB: string;
let shopJpy: string;
let shopKwd: string;
let keyA: string;
let keyB: string;
let keyJpy: string;
let keyKwd: string;
let readOnlyA: string;

beforeAll(async () => {
  clock = new ManualClock('2026-11-22T00:00:00Z');
  t = await startTestApp({ clock });
  ({ shopA, shopB, keyA, keyB } = await shopPair(t, {
    a: { name: 'A', plan: 'business', scopes: ['customers.write'] },
    b: { name: 'B' },
  }));
  shopJpy = await t.createShop({ name: 'Yen', currency: 'JPY' });
  shopKwd = await t.createShop({ name: 'Dinar', currency: 'KWD' });
  readOnlyA = (await t.createKey(shopA, ['customers.read'])).key;
  keyJpy = (await t.createKey(shopJpy, ['customers.write'])).key;
  keyKwd = (await t.createKey(shopKwd, ['customers.write'])).key;
});

// The invariant, after every test: for every customer of every shop, the cached balance is the ledger's sum, the
// balance is never negative, and the hold fits inside it.
afterEach(async () => {
  const rows = await sql<{ id: string; balance: string; held: string; sum: string }>`
    select c.id, c.wallet_balance::text as balance, c.wallet_held::text as held,
      coalesce((select sum(w.amount) from wallet_transactions w where w.shop_id = c.shop_id and w.customer_id = c.id), 0)::text as sum
    from customers c`.execute(t.db);
  for (const r of rows.rows) {
    expect({ id: r.id, balance: new Decimal(r.balance).toFixed() }).toEqual({
      id: r.id,
      balance: new Decimal(r.sum).toFixed(),
    });
    expect(new Decimal(r.balance).gte(0)).toBe(true);
    expect(new Decimal(r.held).gte(0) && new Decimal(r.held).lte(r.balance)).toBe(true);
  }
});
afterAll(() => t.close());

let n = 0;
async function customer(shopId: string, walletBalance?: string): Promise<string> {
  n += 1;
  const fixture = {
    email: `wallet${n}@example.com`,
    ...(walletBalance === undefined ? {} : { wallet_balance: walletBalance }),
  };
  return (await t.seed(shopId, { customers: [fixture] })).customers[0]!;
}

const credit = (id: string, body: object, key = keyA) =>
  t.http.post(`/dev/v1/customers/${id}/wallet/credit`).set(bearer(key)).send(body);
const debit = (id: string, body: object, key = keyA) =>
  t.http.post(`/dev/v1/customers/${id}/wallet/debit`).set(bearer(key)).send(body);

/** Everything a wallet movement may change: the customer's wallet columns, its ledger, events, its audit lines. */
async function state(customerId: string) {
  const row = await t.db
    .selectFrom('customers')
    .select(['shop_id', 'wallet_balance', 'wallet_held', 'updated_at'])
    .where('id', '=', customerId)
    .executeTakeFirstOrThrow();
  const ledger = await t.db
    .selectFrom('wallet_transactions')
    .select(['id', 'amount', 'currency', 'type', 'description', 'order_id'])
    .where('customer_id', '=', customerId)
    .orderBy('id')
    .execute();
  const events = await t.db
    .selectFrom('events')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('shop_id', '=', row.shop_id)
    .executeTakeFirstOrThrow();
  return {
    balance: new Decimal(row.wallet_balance).toFixed(),
    held: new Decimal(row.wallet_held).toFixed(),
    updated_at: row.updated_at.toISOString(),
    ledger: ledger.map((l) => ({ ...l, amount: new Decimal(l.amount).toFixed() })),
    events: events.n,
  };
}

async function auditOf(customerId: string) {
  return t.db
    .selectFrom('audit_entries')
    .select(['operation_id', 'status', 'error_code', 'resource_type', 'resource_id'])
    .where(sql<boolean>`path_params->>'id' = ${customerId}`)
    .orderBy('occurred_at')
    .orderBy('id')
    .execute();
}

describe('credit', () => {
  test('adds store credit: one ledger row, the cached balance, the transaction object with exact numbers', async () => {
    const cus = await customer(shopA, '25.00');
    const wallet = await t.db
      .selectFrom('customers')
      .select('wallet_id')
      .where('id', '=', cus)
      .executeTakeFirstOrThrow();
    clock.set('2026-11-22T01:00:00Z');
    const res = await credit(cus, { amount: '10.00', type: 'PROMO', description: 'One year of updates.' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        transaction_id: expect.stringMatching(/^wtx_[0-9a-f]{32}$/),
        amount: 10,
        currency: 'USD',
        new_balance: 35,
        available_balance: 35,
        wallet_id: wallet.wallet_id,
      },
    });
    const after = await state(cus);
    expect(after.balance).toBe('35');
    expect(after.updated_at).toBe('2026-11-22T01:00:00.000Z');
    // The fixture's opening balance and this credit.
    expect(after.ledger).toEqual([
      {
        id: expect.any(String),
        amount: '25',
        currency: 'USD',
        type: 'ADJUSTMENT',
        description: 'Opening balance',
        order_id: null,
      },
      {
        id: res.body.data.transaction_id,
        amount: '10',
        currency: 'USD',
        type: 'PROMO',
        description: 'One year of updates.',
        order_id: null,
      },
    ]);
    // No wallet events exist in the contract: the audit trail records the request.
    expect(after.events).toBe(0);
    expect(await auditOf(cus)).toEqual([
      {
        operation_id: 'creditCustomerWallet',
        status: 200,
        error_code: null,
        resource_type: 'customer',
        resource_id: cus,
      },
    ]);
    // GET /customers/{id} shows the same wallet.
    const got = await t.http.get(`/dev/v1/customers/${cus}`).set(bearer(readOnlyA));
    expect(got.body.data.wallet).toEqual({ id: wallet.wallet_id, balance: 35, available_balance: 35, currency: 'USD' });
  });

  test.each(['PROMO', 'REFUND', 'COMPENSATION', 'TOP_UP', 'ADJUSTMENT'])(
    'type %s is accepted and stored',
    async (type) => {
      const cus = await customer(shopA);
      const res = await credit(cus, { amount: '1.5', type });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ amount: 1.5, new_balance: 1.5, available_balance: 1.5 });
      expect((await state(cus)).ledger).toEqual([expect.objectContaining({ type, amount: '1.5', description: null })]);
    },
  );

  test('the amount keeps its exact digits up to the largest storable balance; beyond it is refused', async () => {
    const cus = await customer(shopA);
    const big = await credit(cus, { amount: '999999999999.98', type: 'TOP_UP' });
    expect(big.status).toBe(200);
    expect(big.text).toContain('"new_balance":999999999999.98');
    const cent = await credit(cus, { amount: '0.01', type: 'TOP_UP' });
    expect(cent.status).toBe(200);
    expect(cent.text).toContain('"new_balance":999999999999.99');
    const before = await state(cus);
    const over = await credit(cus, { amount: '0.01', type: 'TOP_UP' });
    expect(over.status).toBe(422);
    expect(over.body.error.details).toEqual([{ field: 'amount', message: expect.stringContaining('beyond') }]);
    expect(await state(cus)).toEqual(before);
  });

  test.each([
    ['0', 'greater than 0'],
    ['0.00', 'greater than 0'],
    ['10.001', 'at most 2 decimals'],
  ])('amount %s is refused with 422 on amount, nothing written', async (amount, message) => {
    const cus = await customer(shopA, '5.00');
    const before = await state(cus);
    const res = await credit(cus, { amount, type: 'PROMO' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'amount', message: expect.stringContaining(message) }]);
    expect(await state(cus)).toEqual(before);
  });

  test.each([
    ['a JSON number (the contract says decimal string)', { amount: 10, type: 'PROMO' }],
    ['a negative amount', { amount: '-5.00', type: 'PROMO' }],
    ['an exponent', { amount: '1e3', type: 'PROMO' }],
    ['no type', { amount: '10.00' }],
    ['no amount', { type: 'PROMO' }],
    ['a debit type', { amount: '10.00', type: 'PURCHASE' }],
    ['an internal type', { amount: '10.00', type: 'AFFILIATE_COMMISSION' }],
    ['a description over 500 characters', { amount: '10.00', type: 'PROMO', description: 'x'.repeat(501) }],
    ['an unknown field', { amount: '10.00', type: 'PROMO', extra: true }],
  ])('%s is refused with 422, nothing written', async (_label: string, body: object) => {
    const cus = await customer(shopA, '5.00');
    const before = await state(cus);
    const res = await credit(cus, body);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(await state(cus)).toEqual(before);
  });

  test('a currency without decimals (JPY) refuses 10.5 and takes 1500; KWD takes three decimals', async () => {
    const yen = await customer(shopJpy);
    const before = await state(yen);
    const half = await credit(yen, { amount: '10.5', type: 'PROMO' }, keyJpy);
    expect([half.status, half.body.error.details]).toEqual([
      422,
      [{ field: 'amount', message: 'must have at most 0 decimals (the minor unit of JPY)' }],
    ]);
    expect(await state(yen)).toEqual(before);
    const whole = await credit(yen, { amount: '1500', type: 'PROMO' }, keyJpy);
    expect(whole.status).toBe(200);
    expect(whole.body.data).toMatchObject({ amount: 1500, currency: 'JPY', new_balance: 1500 });

    const dinar = await customer(shopKwd);
    const ok = await credit(dinar, { amount: '1.234', type: 'PROMO' }, keyKwd);
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ amount: 1.234, currency: 'KWD', new_balance: 1.234 });
    const four = await credit(dinar, { amount: '1.2345', type: 'PROMO' }, keyKwd);
    expect(four.status).toBe(422);
    expect((await state(dinar)).balance).toBe('1.234');
  });
});

describe('debit', () => {
  test("removes store credit; the transaction's amount is negative; the ledger row is signed", async () => {
    const cus = await customer(shopA, '25.00');
    const res = await debit(cus, { amount: '10.00', type: 'PURCHASE', description: 'Manual purchase' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ amount: -10, currency: 'USD', new_balance: 15, available_balance: 15 });
    const after = await state(cus);
    expect(after.ledger).toEqual([
      expect.objectContaining({ amount: '25', type: 'ADJUSTMENT' }),
      expect.objectContaining({
        id: res.body.data.transaction_id,
        amount: '-10',
        type: 'PURCHASE',
        description: 'Manual purchase',
      }),
    ]);
    expect(await auditOf(cus)).toEqual([expect.objectContaining({ operation_id: 'debitCustomerWallet', status: 200 })]);
  });

  test.each(['PURCHASE', 'CORRECTION', 'EXPIRY', 'ADJUSTMENT'])('type %s is accepted', async (type) => {
    const cus = await customer(shopA, '3.00');
    const res = await debit(cus, { amount: '0.01', type });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ amount: -0.01, new_balance: 2.99 });
  });

  test('the whole balance can be taken; one cent more is INSUFFICIENT_FUNDS and changes nothing', async () => {
    const cus = await customer(shopA, '12.34');
    const before = await state(cus);
    const over = await debit(cus, { amount: '12.35', type: 'PURCHASE' });
    expect(over.status).toBe(400);
    expect(over.body.error.code).toBe('INSUFFICIENT_FUNDS');
    expect(over.body.error.message).toContain('12.34 USD available');
    expect(await state(cus)).toEqual(before);
    // The refusal is in the audit trail, with its code.
    expect(await auditOf(cus)).toEqual([
      expect.objectContaining({ operation_id: 'debitCustomerWallet', status: 400, error_code: 'INSUFFICIENT_FUNDS' }),
    ]);
    const all = await debit(cus, { amount: '12.34', type: 'PURCHASE' });
    expect(all.status).toBe(200);
    expect(all.body.data).toMatchObject({ amount: -12.34, new_balance: 0, available_balance: 0 });
    const empty = await debit(cus, { amount: '0.01', type: 'PURCHASE' });
    expect([empty.status, empty.body.error.code]).toEqual([400, 'INSUFFICIENT_FUNDS']);
  });

  test('what a pending order holds is not available: the debit is judged against balance minus held', async () => {
    const cus = await customer(shopA, '20.00');
    await t.db.updateTable('customers').set({ wallet_held: '15' }).where('id', '=', cus).execute();
    const before = await state(cus);
    const over = await debit(cus, { amount: '5.01', type: 'PURCHASE' });
    expect([over.status, over.body.error.code]).toEqual([400, 'INSUFFICIENT_FUNDS']);
    expect(await state(cus)).toEqual(before);
    const ok = await debit(cus, { amount: '5.00', type: 'PURCHASE' });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ new_balance: 15, available_balance: 0 });
    // A credit shows the hold too.
    const more = await credit(cus, { amount: '1.00', type: 'PROMO' });
    expect(more.body.data).toMatchObject({ new_balance: 16, available_balance: 1 });
    await t.db.updateTable('customers').set({ wallet_held: '0' }).where('id', '=', cus).execute();
  });

  test.each([
    [{ amount: '0', type: 'PURCHASE' }],
    [{ amount: '1.001', type: 'PURCHASE' }],
    [{ amount: '-1.00', type: 'PURCHASE' }],
    [{ amount: '1.00', type: 'PROMO' }],
    [{ amount: '1.00', type: 'ORDER_PAYMENT' }],
    [{ amount: 1, type: 'PURCHASE' }],
  ])('%j is refused with 422, nothing written', async (body: object) => {
    const cus = await customer(shopA, '5.00');
    const before = await state(cus);
    const res = await debit(cus, body);
    expect([res.status, res.body.error.code]).toEqual([422, 'VALIDATION_ERROR']);
    expect(await state(cus)).toEqual(before);
  });
});

describe('who may move a wallet', () => {
  test.each(['credit', 'debit'])(
    "%s: another shop's customer is 404 CUSTOMER_NOT_FOUND and stays as it was",
    async (op) => {
      const cus = await customer(shopA, '10.00');
      const before = await state(cus);
      const res =
        op === 'credit'
          ? await credit(cus, { amount: '1.00', type: 'PROMO' }, keyB)
          : await debit(cus, { amount: '1.00', type: 'PURCHASE' }, keyB);
      expect([res.status, res.body.error.code]).toEqual([404, 'CUSTOMER_NOT_FOUND']);
      expect(await state(cus)).toEqual(before);
      const unknown =
        op === 'credit'
          ? await credit('cus_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f', { amount: '1.00', type: 'PROMO' })
          : await debit('cus_0195f3c1a2b37c9d8e4f5a6b7c8d9e0f', { amount: '1.00', type: 'PURCHASE' });
      expect([unknown.status, unknown.body.error.code]).toEqual([404, 'CUSTOMER_NOT_FOUND']);
    },
  );

  test('a key without customers.write is 403; nothing written', async () => {
    const cus = await customer(shopA, '10.00');
    const before = await state(cus);
    const res = await credit(cus, { amount: '1.00', type: 'PROMO' }, readOnlyA);
    expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
    const res2 = await debit(cus, { amount: '1.00', type: 'PURCHASE' }, readOnlyA);
    expect([res2.status, res2.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(await state(cus)).toEqual(before);
  });

  test('an Idempotency-Key replays the first answer and moves the wallet once', async () => {
    const cus = await customer(shopA, '10.00');
    const first = await t.http
      .post(`/dev/v1/customers/${cus}/wallet/debit`)
      .set(bearer(keyA))
      .set('Idempotency-Key', `debit-${cus}`)
      .send({ amount: '4.00', type: 'PURCHASE' });
    const second = await t.http
      .post(`/dev/v1/customers/${cus}/wallet/debit`)
      .set(bearer(keyA))
      .set('Idempotency-Key', `debit-${cus}`)
      .send({ amount: '4.00', type: 'PURCHASE' });
    expect(second.headers['idempotency-status']).toBe('cached');
    expect(second.body).toEqual(first.body);
    const after = await state(cus);
    expect(after.balance).toBe('6');
    expect(after.ledger).toHaveLength(2);
  });
});

describe('postWalletMovement (for other modules)', () => {
  test('posts an internal AFFILIATE_COMMISSION credit and refuses what it must', async () => {
    const cus = await customer(shopA, '1.00');
    const view = await t.db.transaction().execute((trx) =>
      postWalletMovement(shopWrite(trx, shopA, new Effects(), clock), cus, {
        amount: '2.50',
        type: 'AFFILIATE_COMMISSION',
      }),
    );
    expect(view).toMatchObject({ currency: 'USD' });
    expect(JSON.parse(JSON.stringify(view))).toMatchObject({ amount: 2.5, new_balance: 3.5, available_balance: 3.5 });
    expect((await state(cus)).ledger.at(-1)).toMatchObject({ type: 'AFFILIATE_COMMISSION', amount: '2.5' });
    expect(await walletLedgerSum(t.db, shopA, cus)).toBe('3.50000000');

    const before = await state(cus);
    const refused = async (shopId: string, amount: string) =>
      t.db
        .transaction()
        .execute((trx) =>
          postWalletMovement(shopWrite(trx, shopId, new Effects(), clock), cus, { amount, type: 'ADJUSTMENT' }),
        )
        .then(
          () => undefined,
          (e: unknown) => e,
        );
    expect(await refused(shopA, '-3.51')).toMatchObject({ code: 'INSUFFICIENT_FUNDS', status: 400 });
    expect(await refused(shopB, '1.00')).toBeInstanceOf(NotFoundError);
    expect(await refused(shopB, '1.00')).toMatchObject({ code: 'CUSTOMER_NOT_FOUND' });
    expect(await refused(shopA, '0.001')).toBeInstanceOf(ValidationError);
    expect(await refused(shopA, '0')).toBeInstanceOf(ValidationError);
    expect(await refused(shopA, '1,00')).toBeInstanceOf(ValidationError);
    expect(await state(cus)).toEqual(before);
    // The database refuses a row whose sign contradicts its type.
    await expect(
      t.db
        .insertInto('wallet_transactions')
        .values({ id: 'wtx_x', shop_id: shopA, customer_id: cus, amount: '-1', currency: 'USD', type: 'PROMO' })
        .execute(),
    ).rejects.toThrow(/wallet_transactions_sign/);
    // …and a negative balance or a hold beyond the balance, whoever writes it.
    await expect(
      t.db.updateTable('customers').set({ wallet_balance: '-1' }).where('id', '=', cus).execute(),
    ).rejects.toThrow(/customers_wallet_balance_nonnegative/);
    await expect(
      t.db.updateTable('customers').set({ wallet_held: '100' }).where('id', '=', cus).execute(),
    ).rejects.toThrow(/customers_wallet_held_within/);
  });

  test('a customer of another shop cannot be named by a ledger row (composite foreign key)', async () => {
    const cus = await customer(shopA);
    await expect(
      t.db
        .insertInto('wallet_transactions')
        .values({ id: 'wtx_y', shop_id: shopB, customer_id: cus, amount: '1', currency: 'USD', type: 'PROMO' })
        .execute(),
    ).rejects.toThrow(/wallet_transactions_customer_fkey/);
  });
});

describe('fixtures', () => {
  test('wallet_balance is seeded as one opening ledger row; none for a zero balance', async () => {
    const seeded = await t.seed(shopA, {
      customers: [
        { email: 'fx-rich@example.com', wallet_balance: '42.50' },
        { email: 'fx-zero@example.com', wallet_balance: '0' },
      ],
    });
    const [rich, zero] = seeded.customers as [string, string];
    expect(await state(rich)).toMatchObject({
      balance: '42.5',
      ledger: [
        {
          id: expect.any(String),
          amount: '42.5',
          currency: 'USD',
          type: 'ADJUSTMENT',
          description: 'Opening balance',
          order_id: null,
        },
      ],
    });
    expect(await state(zero)).toMatchObject({ balance: '0', ledger: [] });
  });

  test('an imported wallet_balance keeps every stored digit; API movements stay in the minor unit', async () => {
    const seeded = await t.seed(shopA, {
      customers: [{ email: 'fx-digits@example.com', wallet_balance: '0.12345678' }],
    });
    const cus = seeded.customers[0]!;
    expect(await state(cus)).toMatchObject({
      balance: '0.12345678',
      ledger: [expect.objectContaining({ amount: '0.12345678', type: 'ADJUSTMENT' })],
    });
    const ok = await debit(cus, { amount: '0.12', type: 'CORRECTION' });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('"new_balance":0.00345678');
    const more = await debit(cus, { amount: '0.01', type: 'CORRECTION' });
    expect([more.status, more.body.error.code]).toEqual([400, 'INSUFFICIENT_FUNDS']);
    // Sub-cent digits cannot be sent through the API.
    const odd = await debit(cus, { amount: '0.00345678', type: 'CORRECTION' });
    expect(odd.status).toBe(422);
    expect((await state(cus)).balance).toBe('0.00345678');
  });
});

describe('migration 0011', () => {
  test('balances written before the ledger existed become one opening ADJUSTMENT row each (rolled back after)', async () => {
    const cus = await customer(shopA);
    const untouched = await customer(shopA);
    const rolledBack = new Error('rolled back');
    await expect(
      t.db.transaction().execute(async (trx) => {
        const schema = trx as unknown as Kysely<unknown>;
        // Back to the state before 0011 (0012 builds on it), a balance set the old way, then 0011 (and 0012) again.
        await m0012.down!(schema);
        await m0011.down!(schema);
        await trx.updateTable('customers').set({ wallet_balance: '12.34' }).where('id', '=', cus).execute();
        await m0011.up(schema);
        await m0012.up(schema);
        const rows = await trx
          .selectFrom('wallet_transactions')
          .select(['customer_id', 'amount', 'currency', 'type', 'description', 'order_id'])
          .where('customer_id', 'in', [cus, untouched])
          .execute();
        expect(rows.map((r) => ({ ...r, amount: new Decimal(r.amount).toFixed() }))).toEqual([
          {
            customer_id: cus,
            amount: '12.34',
            currency: 'USD',
            type: 'ADJUSTMENT',
            description: 'Opening balance',
            order_id: null,
          },
        ]);
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
  });
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;

describe('races (real PostgreSQL)', () => {
  pgOnly('100 concurrent credits and debits on one wallet: exact, never below zero, one linear history', async () => {
    const start = new Decimal('30.00');
    const cus = await customer(shopA, start.toFixed(2));
    const ops = Array.from({ length: 100 }, (_, i) =>
      i % 2 === 0
        ? { kind: 'credit' as const, amount: new Decimal('7.00') }
        : { kind: 'debit' as const, amount: new Decimal('13.00') },
    );
    const results = await Promise.all(
      ops.map((o) =>
        o.kind === 'credit'
          ? credit(cus, { amount: o.amount.toFixed(2), type: 'TOP_UP' })
          : debit(cus, { amount: o.amount.toFixed(2), type: 'PURCHASE' }),
      ),
    );
    const credits = results.filter((r, i) => ops[i]!.kind === 'credit');
    const debits = results.filter((r, i) => ops[i]!.kind === 'debit');
    // Credits always succeed; a debit either succeeds or is refused for funds, nothing else.
    expect(credits.every((r) => r.status === 200)).toBe(true);
    expect(
      debits.every((r) => r.status === 200 || (r.status === 400 && r.body.error.code === 'INSUFFICIENT_FUNDS')),
    ).toBe(true);
    const succeeded = debits.filter((r) => r.status === 200).length;
    const refused = debits.length - succeeded;
    const expected = start.plus(new Decimal(7).times(50)).minus(new Decimal(13).times(succeeded));
    const after = await state(cus);
    expect(after.balance).toBe(expected.toFixed());
    expect(expected.gte(0)).toBe(true);
    // One ledger row per accepted movement (plus the opening one), summing to the balance.
    expect(after.ledger).toHaveLength(1 + 50 + succeeded);
    expect(new Decimal(await walletLedgerSum(t.db, shopA, cus)).toFixed()).toBe(expected.toFixed());
    // The accepted movements form one chain: each started from the balance the one before it left, none below 0.
    const ok = results
      .filter((r) => r.status === 200)
      .map((r) => r.body.data as { amount: number; new_balance: number; available_balance: number });
    expect(ok.every((d) => d.new_balance >= 0 && d.available_balance >= 0)).toBe(true);
    // As a graph of balances (an edge from the balance a movement found to the one it left), the accepted
    // movements must form one path from the start to the final balance that uses every edge once (an Eulerian
    // path: degrees balance out except at its ends, and all edges are connected).
    const key = (d: Decimal.Value) => new Decimal(d).toFixed();
    const degree = new Map<string, number>();
    const links = new Map<string, Set<string>>();
    const link = (a: string, b: string) => {
      links.set(a, (links.get(a) ?? new Set()).add(b));
      links.set(b, (links.get(b) ?? new Set()).add(a));
    };
    for (const d of ok) {
      const from = key(new Decimal(d.new_balance).minus(d.amount));
      const to = key(d.new_balance);
      degree.set(from, (degree.get(from) ?? 0) + 1);
      degree.set(to, (degree.get(to) ?? 0) - 1);
      link(from, to);
    }
    const startKey = key(start);
    const endKey = key(expected);
    for (const [node, d] of degree) {
      const want = startKey === endKey ? 0 : node === startKey ? 1 : node === endKey ? -1 : 0;
      expect({ node, d }).toEqual({ node, d: want });
    }
    const seen = new Set([startKey]);
    const queue = [startKey];
    while (queue.length > 0)
      for (const m of links.get(queue.pop()!) ?? []) if (!seen.has(m) && seen.add(m)) queue.push(m);
    expect(seen.size).toBe(links.size);
    // Every refused debit saw less than 13.00 available (its message says how much).
    for (const r of debits.filter((x) => x.status === 400)) {
      const available = /has ([0-9.]+) USD available/.exec(r.body.error.message as string)?.[1];
      expect(new Decimal(available!).lt(13)).toBe(true);
    }
    // Report the outcome for the record.
    console.log(
      `wallet race: 50 credits of 7.00, ${succeeded} debits of 13.00 accepted, ${refused} refused; balance ${expected.toFixed(2)}`,
    );
  });
});

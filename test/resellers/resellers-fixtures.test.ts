// Reseller fixtures (src/ops/fixtures/resellers.ts): a shop seeded with tiers, a program and resellers in every
// state, read back through HTTP; the cross-field rules of parseFixtures; and one real CLI process
// (`reseller tier create`) to prove the command is wired (the moves themselves are tested through their functions in
// test/resellers/resellers.test.ts).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FixtureError, parseFixtures } from '../../src/ops/fixtures/fixtures';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const fixtures = {
  reseller_tiers: [
    { name: 'Gold', discount_percent: '20', auto_advance_revenue: '1000', auto_advance_orders: 10, sort_order: 2 },
    { name: 'Base', discount_percent: '5', sort_order: 0, is_default: true },
    {
      name: 'Silver',
      discount_percent: '12.5',
      auto_advance_revenue: null,
      auto_advance_orders: 3,
      auto_advance_requires_both: true,
      sort_order: 1,
    },
  ],
  reseller_program: {
    enabled: true,
    enrollment_mode: 'APPLICATION' as const,
    default_tier: 'Base',
    application_message: 'Tell us about your audience.',
    require_application_note: true,
  },
  resellers: [
    { email: 'Invited@example.com', status: 'INVITED' as const },
    { email: 'applied@example.com', status: 'APPLIED' as const, application_note: 'I run a community.' },
    {
      email: 'active@example.com',
      status: 'ACTIVE' as const,
      tier: 'Gold',
      lifetime_revenue: '1250.5',
      lifetime_orders: 12,
    },
    { email: 'suspended@example.com', status: 'SUSPENDED' as const, tier: 'Silver' },
    { email: 'rejected@example.com', status: 'REJECTED' as const },
  ],
};

test('a shop seeded with tiers, the program and a reseller in every state reads back through the API', async () => {
  const shopId = await t.createShop({ name: 'Seeded resale' });
  const key = (await t.createKey(shopId, ['resellers.read'])).key;
  const seeded = await t.seed(shopId, parseFixtures(fixtures, new Date()));
  expect(seeded.resellerTiers).toHaveLength(3);
  expect(seeded.resellers).toHaveLength(5);

  const tiers = (await t.http.get('/dev/v1/reseller-tiers').set(bearer(key))).body.data.tiers;
  expect(tiers.map((x: { name: string }) => x.name)).toEqual(['Base', 'Silver', 'Gold']);
  expect(tiers).toMatchObject([
    { discount_percent: 5, is_default: true, member_count: 0, auto_advance_revenue: null, auto_advance_orders: null },
    {
      discount_percent: 12.5,
      is_default: false,
      member_count: 1,
      auto_advance_orders: 3,
      auto_advance_requires_both: true,
    },
    {
      discount_percent: 20,
      is_default: false,
      member_count: 1,
      auto_advance_revenue: '1000.00',
      auto_advance_orders: 10,
    },
  ]);

  const program = (await t.http.get('/dev/v1/reseller-program').set(bearer(key))).body.data.program;
  expect(program).toMatchObject({
    enabled: true,
    enrollment_mode: 'APPLICATION',
    default_tier_id: tiers[0].id,
    application_message: 'Tell us about your audience.',
    require_application_note: true,
  });

  const list = (await t.http.get('/dev/v1/resellers').set(bearer(key))).body.data;
  expect(list.total).toBe(5);
  const byEmail = Object.fromEntries(list.items.map((r: { email: string }) => [r.email, r]));
  expect(byEmail['invited@example.com']).toMatchObject({
    status: 'INVITED',
    tier: { name: 'Base' },
    approved_at: null,
  });
  expect(byEmail['applied@example.com']).toMatchObject({ status: 'APPLIED', application_note: 'I run a community.' });
  expect(byEmail['active@example.com']).toMatchObject({
    status: 'ACTIVE',
    tier: { name: 'Gold', discount_percent: 20 },
    lifetime_revenue: '1250.50',
    lifetime_orders: 12,
  });
  expect(byEmail['active@example.com'].approved_at).not.toBeNull();
  expect(byEmail['suspended@example.com']).toMatchObject({ status: 'SUSPENDED', tier: { name: 'Silver' } });
  expect(byEmail['suspended@example.com'].suspended_at).not.toBeNull();
  expect(byEmail['rejected@example.com'].rejected_at).not.toBeNull();
  // Each reseller is a customer of the shop; nothing was mailed or announced.
  const customers = await t.db.selectFrom('customers').select('id').where('shop_id', '=', shopId).execute();
  expect(customers).toHaveLength(5);
  const events = await t.db.selectFrom('events').select('type').where('shop_id', '=', shopId).execute();
  expect(events.filter((e) => e.type.startsWith('reseller:'))).toEqual([]);
});

test.each<[string, Record<string, unknown>, RegExp]>([
  [
    'a duplicate tier name',
    {
      reseller_tiers: [
        { name: 'A', discount_percent: '1' },
        { name: 'A', discount_percent: '2' },
      ],
    },
    /reseller_tiers\/1\/name duplicates/,
  ],
  [
    'two default tiers',
    {
      reseller_tiers: [
        { name: 'A', discount_percent: '1', is_default: true },
        { name: 'B', discount_percent: '2', is_default: true },
      ],
    },
    /at most one tier/,
  ],
  ['OPEN without a default tier', { reseller_program: { enrollment_mode: 'OPEN' } }, /OPEN needs a default tier/],
  [
    'an unknown tier name',
    {
      reseller_tiers: [{ name: 'A', discount_percent: '1' }],
      resellers: [{ email: 'x@example.com', status: 'ACTIVE', tier: 'B' }],
    },
    /resellers\/0\/tier names no tier/,
  ],
  [
    'a reseller without a tier and no default',
    {
      reseller_tiers: [{ name: 'A', discount_percent: '1' }],
      resellers: [{ email: 'x@example.com', status: 'ACTIVE' }],
    },
    /resellers\/0\/tier is required/,
  ],
  [
    'one email twice',
    {
      reseller_tiers: [{ name: 'A', discount_percent: '1', is_default: true }],
      resellers: [
        { email: 'x@example.com', status: 'ACTIVE' },
        { email: 'X@example.com', status: 'INVITED' },
      ],
    },
    /resellers\/1\/email duplicates/,
  ],
  [
    'a percent above 100',
    { reseller_tiers: [{ name: 'A', discount_percent: '101' }] },
    /reseller_tiers\/0\/discount_percent/,
  ],
  [
    'an unknown status',
    {
      reseller_tiers: [{ name: 'A', discount_percent: '1', is_default: true }],
      resellers: [{ email: 'x@example.com', status: 'GONE' }],
    },
    /resellers\/0\/status/,
  ],
])('parseFixtures refuses %s', (_name, value, message) => {
  expect(() => parseFixtures(value, new Date())).toThrow(FixtureError);
  expect(() => parseFixtures(value, new Date())).toThrow(message);
});

test('the CLI: `reseller tier create --default` in a real process', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mdapi-reseller-cli-'));
  const root = join(__dirname, '..', '..');
  const run = promisify(execFile);
  const env = { ...process.env, DATABASE_URL: '', DATA_DIR: join(dir, 'pglite') };
  const cli = async (...args: string[]) => {
    try {
      const tsx = join(root, 'node_modules', '.bin', 'tsx');
      return JSON.parse(
        (await run(tsx, [join(root, 'src', 'ops', 'cli-main.ts'), ...args, '--json'], { env, cwd: root })).stdout,
      );
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      throw new Error(`cli ${args.join(' ')} failed: ${e.stdout ?? ''} ${e.stderr ?? ''}`, { cause: err });
    }
  };
  try {
    const shop = await cli('shop', 'create', '--name', 'CLI resale');
    const tier = await cli(
      'reseller',
      'tier',
      'create',
      '--shop',
      shop.id,
      '--name',
      'Base',
      '--discount',
      '7.5',
      '--orders',
      '3',
      '--default',
    );
    expect(tier).toMatchObject({ name: 'Base', discount_percent: 7.5, auto_advance_orders: 3, is_default: true });
    expect(tier.id).toMatch(/^tier_/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 240_000);

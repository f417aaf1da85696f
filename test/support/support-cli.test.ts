// `cli dispute open|close`, `cli review create` and `cli ticket create` end to end, as an operator runs them
// (`npm run -s cli -- … --json`; in-process through test/helpers/cli.ts on this file's database): an order paid on
// the SANDBOX page is disputed and the dispute lost; a review and a ticket are written and listed by the API;
// refusals exit 1 with the reason and write nothing.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { inProcessCli, type Cli } from '../helpers/cli';
import { bearer, contractClient, memoryLogger } from '../helpers/test-app';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';
import { systemClock } from '../../src/platform/clock';

let dir: string;
let database: TestDatabase;
let cli: Cli;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mdapi-support-cli-'));
  database = await createTestDatabase();
  cli = inProcessCli(database);
});
afterAll(async () => {
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The app on the CLI's database. */
async function withApp(fn: (app: Express) => Promise<void>): Promise<void> {
  const app = await createApp({
    clock: systemClock,
    db: database.db,
    config: loadConfig({ PUBLIC_URL: 'http://api.test' }),
    logger: memoryLogger().logger,
  });
  await fn(app);
}

test('dispute open and close, review create, ticket create: written, listed, and refused with reasons', async () => {
  // The buyer pays with SANDBOX, which only test mode offers: every command acts in the shop's test mode.
  const shop = (await cli('shop', 'create', '--name', 'Support')).json.id as string;
  const key = (await cli('key', 'create', '--shop', shop, '--mode', 'test', '--scopes', '*')).json.key as string;
  const file = join(dir, 'support.json');
  writeFileSync(
    file,
    JSON.stringify({
      products: [{ title: 'Consulting', type: 'SERVICE', price: '30.00' }],
      customers: [{ email: 'ada@example.com' }],
    }),
  );
  const product = (await cli('seed', '--shop', shop, '--mode', 'test', '--file', file)).json.products[0] as string;
  const created = await cli(
    'order',
    'create',
    '--shop',
    shop,
    '--mode',
    'test',
    '--email',
    'ada@example.com',
    '--items',
    product,
  );
  expect(created.code).toBe(0);
  const orderId = created.json.id as string;

  // Not paid yet: the gateway cannot dispute it, and nobody can review it.
  const early = await cli('dispute', 'open', '--shop', shop, '--mode', 'test', '--order', orderId);
  expect([early.code, early.json.error.message]).toEqual([
    1,
    'The order was paid through no gateway; only that gateway can dispute it, not SANDBOX.',
  ]);
  const notDone = await cli('review', 'create', '--shop', shop, '--mode', 'test', '--order', orderId, '--rating', '5');
  expect([notDone.code, notDone.json.error.message]).toEqual([
    1,
    'The order is PENDING; only a COMPLETED order (paid and not refunded or disputed) can be reviewed.',
  ]);

  // The buyer pays on the SANDBOX page.
  await withApp(async (app) => {
    const started = await request(app)
      .post(`/invoice/${created.json.uniqid}/pay`)
      .type('form')
      .send({ gateway: 'SANDBOX' });
    expect(started.status).toBe(303);
    const session = /(sbx_[0-9a-f]{32})$/.exec(started.headers.location ?? '')![1]!;
    expect((await request(app).post(`/sandbox/checkout/${session}/pay`)).status).toBe(303);
  });

  const review = await cli(
    'review',
    'create',
    '--shop',
    shop,
    '--mode',
    'test',
    '--order',
    orderId,
    '--rating',
    '4',
    '--message',
    'Helpful',
  );
  expect(review.code).toBe(0);
  expect(review.json).toMatchObject({
    order_id: orderId,
    product_id: product,
    rating: 4,
    customer_email: 'ada@example.com',
  });
  const badRating = await cli(
    'review',
    'create',
    '--shop',
    shop,
    '--mode',
    'test',
    '--order',
    orderId,
    '--rating',
    '9',
  );
  expect([badRating.code, badRating.json.error.message]).toEqual([1, '--rating must be a whole number from 1 to 5']);

  const ticket = await cli(
    'ticket',
    'create',
    '--shop',
    shop,
    '--mode',
    'test',
    '--email',
    'ada@example.com',
    '--subject',
    'Invoice?',
    '--message',
    'Can I get an invoice?',
    '--order',
    orderId,
    '--priority',
    'low',
  );
  expect(ticket.code).toBe(0);
  expect(ticket.json).toMatchObject({ status: 'OPEN', priority: 'LOW', order_id: orderId, message_count: 1 });
  const stranger = await cli(
    'ticket',
    'create',
    '--shop',
    shop,
    '--mode',
    'test',
    '--email',
    'eve@example.com',
    '--subject',
    'Hi',
    '--message',
    'Hi',
  );
  expect([stranger.code, stranger.json.error.message]).toEqual([
    1,
    'No customer with the email eve@example.com in this shop.',
  ]);
  const noSubject = await cli(
    'ticket',
    'create',
    '--shop',
    shop,
    '--mode',
    'test',
    '--email',
    'ada@example.com',
    '--message',
    'Hi',
  );
  expect([noSubject.code, noSubject.json.error.message]).toEqual([2, '--subject is required']);

  const opened = await cli(
    'dispute',
    'open',
    '--shop',
    shop,
    '--mode',
    'test',
    '--order',
    orderId,
    '--reason',
    'product_unacceptable',
  );
  expect(opened.code).toBe(0);
  expect(opened.json).toMatchObject({ status: 'OPEN', reason: 'PRODUCT_UNACCEPTABLE', amount: 30, gateway: 'SANDBOX' });
  const twice = await cli('dispute', 'open', '--shop', shop, '--mode', 'test', '--order', orderId);
  expect([twice.code, twice.json.error.message]).toEqual([
    1,
    `The order already has an open dispute (${opened.json.id}).`,
  ]);
  const noOutcome = await cli('dispute', 'close', '--shop', shop, '--mode', 'test', '--id', opened.json.id);
  expect(noOutcome.code).toBe(2);
  const badOutcome = await cli(
    'dispute',
    'close',
    '--shop',
    shop,
    '--mode',
    'test',
    '--id',
    opened.json.id,
    '--outcome',
    'maybe',
  );
  expect([badOutcome.code, badOutcome.json.error.message]).toEqual([1, '--outcome must be one of WON, LOST, CLOSED']);
  const lost = await cli(
    'dispute',
    'close',
    '--shop',
    shop,
    '--mode',
    'test',
    '--id',
    opened.json.id,
    '--outcome',
    'lost',
  );
  expect(lost.code).toBe(0);
  expect(lost.json.status).toBe('LOST');

  await withApp(async (app) => {
    const http = contractClient(app);
    const disputes = await http.get('/dev/v1/disputes').set(bearer(key));
    expect(disputes.body.data).toEqual([expect.objectContaining({ id: opened.json.id, status: 'LOST' })]);
    const order = await http.get('/dev/v1/orders').set(bearer(key));
    expect(order.body.data[0]).toMatchObject({ id: orderId, status: 'REFUNDED' });
    expect((await http.get('/dev/v1/reviews').set(bearer(key))).body.data).toEqual([review.json]);
    expect((await http.get('/dev/v1/tickets').set(bearer(key))).body.data).toEqual([ticket.json]);
  });
});

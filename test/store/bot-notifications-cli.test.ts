// `cli bot create` with a token, as an operator runs it: from stdin (--token-stdin) or BOT_TOKEN, never from the
// command line (in-process through test/helpers/cli.ts on this file's database; test/ops/cli.test.ts pipes a token
// to the real program). The token is stored sealed (it opens to the same token with the bot's context), never
// printed, and a malformed one is refused without being echoed and writes nothing.
import type { DatabaseHandle } from '../../db/database';
import { botTokenContext } from '../../src/domain/store/bot-notifications';
import { loadSecretBox } from '../../src/platform/secret-box';
import { inProcessCli, type Cli } from '../helpers/cli';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

const TOKEN = '7123456789:AAFk3vQ9xLmN2pR5sT8uW1yZ4bC7dE0fG3h';
const TOKEN_ENV = '7123456790:AAGq8wE4rT6yU2iO0pA3sD5fG7hJ9kL1zX4';

let database: TestDatabase;
let cli: Cli;

beforeAll(async () => {
  database = await createTestDatabase();
  cli = inProcessCli(database, { ...process.env, BOT_TOKEN: '' });
});
afterAll(async () => {
  await database?.close();
});

async function withDb<T>(fn: (handle: DatabaseHandle) => Promise<T>): Promise<T> {
  return fn(database);
}

test('bot create reads the token from stdin or BOT_TOKEN, stores it sealed and never prints it', async () => {
  const shop = await cli('shop', 'create', '--name', 'Bot CLI Shop');
  expect(shop.code).toBe(0);
  const shopId = (JSON.parse(shop.stdout) as { id: string }).id;

  const fromStdin = await cli.with({ stdin: `${TOKEN}\n` })(
    'bot',
    'create',
    '--shop',
    shopId,
    '--username',
    'stdin_alerts_bot',
    '--token-stdin',
  );
  expect(fromStdin.code).toBe(0);
  const bot1 = JSON.parse(fromStdin.stdout) as { id: string; has_token: boolean };
  expect(bot1.has_token).toBe(true);

  const fromEnv = await cli.with({ env: { BOT_TOKEN: TOKEN_ENV } })(
    'bot',
    'create',
    '--shop',
    shopId,
    '--username',
    'env_alerts_bot',
  );
  expect(fromEnv.code).toBe(0);
  const bot2 = JSON.parse(fromEnv.stdout) as { id: string; has_token: boolean };
  expect(bot2.has_token).toBe(true);

  const none = await cli('bot', 'create', '--shop', shopId, '--username', 'plain_alerts_bot');
  expect(none.code).toBe(0);
  expect((JSON.parse(none.stdout) as { has_token: boolean }).has_token).toBe(false);

  // Refused: a malformed token (not echoed), and --token-stdin with nothing on stdin. Nothing written.
  const bad = await cli.with({ stdin: 'hunter2-secret-value' })(
    'bot',
    'create',
    '--shop',
    shopId,
    '--username',
    'bad_alerts_bot',
    '--token-stdin',
  );
  expect(bad.code).toBe(1);
  expect(bad.stdout + bad.stderr).toMatch(/--token-stdin \(or BOT_TOKEN\) must be a Telegram bot token/);
  expect(bad.stdout + bad.stderr).not.toContain('hunter2-secret-value');
  const empty = await cli('bot', 'create', '--shop', shopId, '--username', 'empty_alerts_bot', '--token-stdin');
  expect(empty.code).toBe(2);

  for (const out of [fromStdin, fromEnv, none, bad, empty]) {
    expect(out.stdout + out.stderr).not.toContain(TOKEN);
    expect(out.stdout + out.stderr).not.toContain(TOKEN_ENV);
  }

  await withDb(async ({ db }) => {
    const rows = await db
      .selectFrom('messaging_bots')
      .select(['id', 'username', 'token_sealed'])
      .where('shop_id', '=', shopId)
      .orderBy('username')
      .execute();
    expect(rows.map((r) => r.username)).toEqual(['env_alerts_bot', 'plain_alerts_bot', 'stdin_alerts_bot']);
    const box = await loadSecretBox(db, undefined);
    const sealed = (id: string) => Buffer.from(rows.find((r) => r.id === id)!.token_sealed!);
    expect(box.open(sealed(bot1.id), botTokenContext(shopId, bot1.id))).toBe(TOKEN);
    expect(box.open(sealed(bot2.id), botTokenContext(shopId, bot2.id))).toBe(TOKEN_ENV);
    // Sealed to its own row: it does not open as another bot's token.
    expect(() => box.open(sealed(bot1.id), botTokenContext(shopId, bot2.id))).toThrow();
    expect(sealed(bot1.id).toString('latin1')).not.toContain(TOKEN.split(':')[1]);
    expect(rows.find((r) => r.username === 'plain_alerts_bot')!.token_sealed).toBeNull();
    const audit = JSON.stringify(await db.selectFrom('audit_entries').selectAll().execute());
    expect(audit).not.toContain(TOKEN);
    expect(audit).not.toContain(TOKEN_ENV);
  });
});

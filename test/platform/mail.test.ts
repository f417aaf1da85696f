// Mail (src/mail/queue.ts, src/worker/mail.ts): queued in the write's transaction (and gone with it when the write
// fails), sent after commit through a real SMTP server (smtp-server on 127.0.0.1), retried on the documented back-off
// while the server is down and then FAILED, given up after MAIL_MAX_ATTEMPTS sends when its outcome cannot be
// recorded, leased on real time (a test clock advanced mid-send hands it to no second worker), RECORDED without
// SMTP_URL and listed by the CLI, and sent exactly once when workers race for the same rows (real PostgreSQL only:
// PGlite has a single connection).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Kysely } from 'kysely';
import { SMTPServer } from 'smtp-server';
import { openEmbedded, openPostgres, type DatabaseHandle } from '../../db/database';
import { migrateToLatest } from '../../db/migrate';
import type { Database, OutboundEmailRow } from '../../db/tables';
import * as admin from '../../src/ops/admin';
import { mailDraft, type ReceiptData } from '../../src/mail/templates';
import { sql } from 'kysely';
import { claimDueEmails, emailsOfShop, markEmailSent, UNRECORDED_MAIL_ERROR } from '../../db/queries/outbound-emails';
import { ManualClock } from '../../src/platform/clock';
import { mailSink, queueMail } from '../../src/mail/queue';
import { MAIL_MAX_ATTEMPTS, mailJob, mailRetrySchedule } from '../../src/worker/mail';
import { UnitOfWork, type EffectSink, type WriteOrigin } from '../../src/platform/unit-of-work';
import { memoryLogger } from '../helpers/test-app';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database';

const onPostgres = Boolean(process.env.DATABASE_URL);
const postgresOnly = onPostgres ? test : test.skip;
const from = 'Merchant Developer API <no-reply@localhost>';
const { logger, logs } = memoryLogger();

const receipt: ReceiptData = {
  shopName: 'Mail Shop',
  uniqid: '0b6f3c52-8a0e-4d55-9d1b-2f64f3e0c9a1',
  items: [{ title: '<script>alert(1)</script> Deluxe', quantity: 2, price: '4.50' }],
  total: '9.00',
  currency: 'EUR',
};

let database: TestDatabase;
let db: Kysely<Database>;
let shopId: string;
let clock: ManualClock;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  shopId = (await admin.createShop(db, { name: 'Mail Shop' })).id;
});
afterAll(async () => {
  await database.close();
});
beforeEach(async () => {
  await db.deleteFrom('outbound_emails').execute();
  clock = new ManualClock('2026-11-22T10:00:00Z');
});

const origin = (shop: string = shopId): WriteOrigin => ({
  shopId: shop,
  credentialId: undefined,
  operationId: 'testMail',
  requestId: 'req_test',
});

async function rows(): Promise<OutboundEmailRow[]> {
  return db.selectFrom('outbound_emails').selectAll().orderBy('id').execute();
}

async function queue(to = 'buyer@example.com'): Promise<string> {
  return db.transaction().execute((trx) => queueMail(trx, shopId, mailDraft(to, 'receipt', receipt), clock.now()));
}

// ---------------------------------------------------------------------------------------------------------------
// A receiving SMTP server
// ---------------------------------------------------------------------------------------------------------------

interface Received {
  rcptTo: string[];
  raw: string;
}

interface Smtp {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** `gate`: every message is received, then answered only once it resolves (a send in flight). */
async function startSmtp(gate?: Promise<void>): Promise<Smtp> {
  const received: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    // No STARTTLS offered: the client would upgrade to it and refuse the server's self-signed certificate.
    disabledCommands: ['STARTTLS'],
    closeTimeout: 1000,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({ rcptTo: session.envelope.rcptTo.map((a) => a.address), raw: Buffer.concat(chunks).toString() });
        if (gate) void gate.then(() => callback());
        else callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A header of a raw message, unfolded. */
function header(raw: string, name: string): string | undefined {
  const head = raw.split(/\r\n\r\n/)[0]!.replace(/\r\n(?=[ \t])/g, '');
  return new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1];
}

/** The decoded text/html part of a raw message (nodemailer writes it quoted-printable). */
function htmlPart(raw: string): string {
  const part = /Content-Type: text\/html[^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n([\s\S]*?)\r\n--/i.exec(raw)?.[1];
  if (part === undefined) throw new Error(`no text/html part in\n${raw}`);
  const encoding = /Content-Type: text\/html[^]*?Content-Transfer-Encoding: ([\w-]+)/i.exec(raw)?.[1]?.toLowerCase();
  if (encoding === 'base64') return Buffer.from(part, 'base64').toString('utf8');
  if (encoding !== 'quoted-printable') return part;
  const bytes = part
    .replace(/=\r\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

// ---------------------------------------------------------------------------------------------------------------

describe('mail is queued with the write, or not at all', () => {
  test('a committed write leaves one QUEUED row, rendered and due now', async () => {
    const uow = new UnitOfWork(db, { clock, sinks: [mailSink(clock)] });
    await uow.run(origin(), async (_trx, fx) => {
      fx.mail(mailDraft('buyer@example.com', 'receipt', receipt));
    });
    const [row, ...rest] = await rows();
    expect(rest).toEqual([]);
    expect(row).toMatchObject({
      id: expect.stringMatching(/^eml_[0-9a-f]{32}$/),
      shop_id: shopId,
      to_address: 'buyer@example.com',
      template: 'receipt',
      subject: `Your receipt from Mail Shop (order ${receipt.uniqid})`,
      status: 'QUEUED',
      attempts: 0,
      next_attempt_at: clock.now(),
      created_at: clock.now(),
      lease_until: null,
      sent_at: null,
    });
    expect(row!.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; Deluxe');
    expect(row!.text).toContain('<script>alert(1)</script> Deluxe x 2: 4.50 EUR');
  });

  test('a write that queues mail and then throws leaves no row', async () => {
    const uow = new UnitOfWork(db, { clock, sinks: [mailSink(clock)] });
    await expect(
      uow.run(origin(), async (trx, fx) => {
        fx.mail(mailDraft('buyer@example.com', 'receipt', receipt));
        // Queued directly in the transaction as well: written, then rolled back with it.
        await queueMail(trx, shopId, mailDraft('direct@example.com', 'receipt', receipt), clock.now());
        expect(await trx.selectFrom('outbound_emails').select('id').execute()).toHaveLength(1);
        throw new Error('the write failed after queueing mail');
      }),
    ).rejects.toThrow('the write failed after queueing mail');
    expect(await rows()).toEqual([]);
  });

  test('a sink that fails after the mail sink wrote rolls the mail back too', async () => {
    const failing: EffectSink = {
      kinds: ['audit'],
      async write() {
        throw new Error('audit sink down');
      },
    };
    const uow = new UnitOfWork(db, { clock, sinks: [mailSink(clock), failing] });
    await expect(
      uow.run(origin(), async (_trx, fx) => fx.mail(mailDraft('buyer@example.com', 'receipt', receipt))),
    ).rejects.toThrow('audit sink down');
    expect(await rows()).toEqual([]);
  });

  test('mail without a shop, or with an unknown template, refuses the write', async () => {
    const uow = new UnitOfWork(db, { clock, sinks: [mailSink(clock)] });
    await expect(
      uow.run({ ...origin(), shopId: undefined }, async (_trx, fx) =>
        fx.mail(mailDraft('a@example.com', 'receipt', receipt)),
      ),
    ).rejects.toThrow('testMail queued mail without a shop');
    await expect(
      uow.run(origin(), async (_trx, fx) => fx.mail({ to: 'a@example.com', template: 'no-such', data: {} })),
    ).rejects.toThrow('unknown mail template "no-such"');
    expect(await rows()).toEqual([]);
  });
});

describe('the mail job', () => {
  let smtp: Smtp;
  beforeAll(async () => {
    smtp = await startSmtp();
  });
  afterAll(async () => {
    await smtp.close();
  });
  beforeEach(() => {
    smtp.received.length = 0;
  });

  test('sends a queued message through SMTP: right recipient, subject and escaped HTML; then SENT', async () => {
    const id = await queue('buyer@example.com');
    const job = mailJob(db, { clock, logger, smtpUrl: smtp.url, from });
    expect(await job.runOnce()).toBe(1);

    expect(smtp.received).toHaveLength(1);
    const { rcptTo, raw } = smtp.received[0]!;
    expect(rcptTo).toEqual(['buyer@example.com']);
    expect(header(raw, 'To')).toBe('buyer@example.com');
    expect(header(raw, 'From')).toBe(from);
    expect(header(raw, 'Subject')).toBe(`Your receipt from Mail Shop (order ${receipt.uniqid})`);
    expect(header(raw, 'X-Mail-Id')).toBe(id);
    const html = htmlPart(raw);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt; Deluxe');
    expect(html).not.toContain('<script>');

    const [row] = await rows();
    expect(row).toMatchObject({
      id,
      status: 'SENT',
      attempts: 1,
      sent_at: clock.now(),
      next_attempt_at: null,
      lease_until: null,
      last_error: null,
      provider_message_id: header(raw, 'Message-ID'),
    });
    expect(row!.provider_message_id).toMatch(/^<.+@.+>$/);
    // Settled: nothing more to do, now or later.
    expect(await job.runOnce()).toBe(0);
    clock.advance(24 * 3_600_000);
    expect(await job.runOnce()).toBe(0);
    expect(smtp.received).toHaveLength(1);
  });

  test('SMTP server down: rescheduled after 1 min, 5 min, 30 min, 2 h, then FAILED after the 5th attempt', async () => {
    const down = await startSmtp();
    await down.close(); // its port now refuses connections
    const id = await queue();
    const job = mailJob(db, { clock, logger, smtpUrl: down.url, from });

    expect(MAIL_MAX_ATTEMPTS).toBe(5);
    expect(mailRetrySchedule).toEqual([60_000, 300_000, 1_800_000, 7_200_000]);
    for (const [i, delay] of mailRetrySchedule.entries()) {
      expect(await job.runOnce()).toBe(1);
      const [row] = await rows();
      expect(row).toMatchObject({
        id,
        status: 'QUEUED',
        attempts: i + 1,
        next_attempt_at: new Date(clock.now().getTime() + delay),
        lease_until: null,
        sent_at: null,
      });
      expect(row!.last_error).toMatch(/ECONNREFUSED/);
      // Not due a moment before its time; due at it.
      clock.advance(delay - 1);
      expect(await job.runOnce()).toBe(0);
      clock.advance(1);
    }
    expect(await job.runOnce()).toBe(1);
    const [row] = await rows();
    expect(row).toMatchObject({ id, status: 'FAILED', attempts: 5, next_attempt_at: null, lease_until: null });
    expect(row!.last_error).toMatch(/ECONNREFUSED/);
    clock.advance(30 * 24 * 3_600_000);
    expect(await job.runOnce()).toBe(0);
    expect(logs.some((l) => l.message === 'mail attempt failed' && l.email_id === id)).toBe(true);
  });

  test('a claim whose lease ran out is taken over; the first claimer can no longer settle the row', async () => {
    const id = await queue();
    const staleLease = new Date(clock.now().getTime() + 60_000);
    const [claimed] = await db.transaction().execute((trx) =>
      claimDueEmails(trx, {
        now: clock.now(),
        realNow: clock.now(),
        until: staleLease,
        maxAttempts: MAIL_MAX_ATTEMPTS,
        limit: 10,
      }),
    );
    // Leased, the attempt counted; when the business wants it sent is unchanged.
    expect(claimed).toMatchObject({ id, lease_until: staleLease, next_attempt_at: clock.now(), attempts: 1 });

    const job = mailJob(db, { clock, logger, smtpUrl: smtp.url, from, leaseMs: 60_000 });
    expect(await job.runOnce()).toBe(0); // still leased
    clock.advance(60_000);
    expect(await job.runOnce()).toBe(1); // the worker that claimed it first is presumed dead
    expect(smtp.received).toHaveLength(1);

    const late = await db.transaction().execute((trx) =>
      markEmailSent(trx, shopId, id, staleLease, {
        status: 'SENT',
        attempts: 2,
        providerMessageId: '<late@example>',
        sentAt: clock.now(),
      }),
    );
    expect(late).toBe(false);
    expect((await rows())[0]).toMatchObject({
      status: 'SENT',
      attempts: 2, // the dead worker's claim counted too
      provider_message_id: header(smtp.received[0]!.raw, 'Message-ID'),
    });
  });

  test('an outcome that cannot be recorded: sent at most MAIL_MAX_ATTEMPTS times, then FAILED, never again', async () => {
    const id = await queue();
    const job = mailJob(db, { clock, logger, smtpUrl: smtp.url, from, leaseMs: 60_000 });
    // The database refuses to record this message as sent (as it refused a NUL byte in a webhook's answer).
    await sql`create function refuse_mail_recording() returns trigger language plpgsql as $$
      begin raise exception 'recording refused (test fault)'; end $$`.execute(db);
    await sql`create trigger refuse_mail_recording before update on outbound_emails for each row
      when (new.status = 'SENT') execute function refuse_mail_recording()`.execute(db);
    try {
      for (let round = 0; round < MAIL_MAX_ATTEMPTS + 3; round++) {
        await job.runOnce();
        clock.advance(60_000);
      }
      // Sent once per claim, every claim counted: MAIL_MAX_ATTEMPTS sends, then given up, and nothing more.
      expect(smtp.received.map((m) => header(m.raw, 'X-Mail-Id'))).toEqual(
        Array.from({ length: MAIL_MAX_ATTEMPTS }, () => id),
      );
      expect(await rows()).toEqual([
        expect.objectContaining({
          id,
          status: 'FAILED',
          attempts: MAIL_MAX_ATTEMPTS,
          next_attempt_at: null,
          lease_until: null,
          sent_at: null,
          last_error: UNRECORDED_MAIL_ERROR,
        }),
      ]);
      expect(logs.some((l) => l.message === 'mail attempt could not be recorded' && l.email_id === id)).toBe(true);
      clock.advance(24 * 3_600_000);
      expect(await job.runOnce()).toBe(0);
    } finally {
      await sql`drop trigger refuse_mail_recording on outbound_emails`.execute(db);
      await sql`drop function refuse_mail_recording()`.execute(db);
    }
  });

  test('a test clock advanced 35 days while a message is in flight does not end its lease: sent once', async () => {
    let release!: () => void;
    const held = await startSmtp(new Promise<void>((resolve) => (release = resolve)));
    try {
      const id = await queue();
      // The worker's passes over a test shop run on the shop's clock; the lease on the job's (real) clock.
      const shopClock = new ManualClock(clock.now());
      const scope = { shopId, clock: shopClock };
      const job = () => mailJob(db, { clock, logger, smtpUrl: held.url, from, leaseMs: 60_000 });
      const inFlight = job().runOnce(scope);
      while (held.received.length === 0) await new Promise((r) => setTimeout(r, 20));

      // 35 days later on the shop's clock, a second worker's pass over the shop: the lease still holds.
      shopClock.advance(35 * 24 * 3_600_000);
      expect(await job().runOnce(scope)).toBe(0);
      expect(await job().runOnce()).toBe(0);

      release();
      expect(await inFlight).toBe(1);
      expect(held.received).toHaveLength(1);
      expect(await rows()).toEqual([expect.objectContaining({ id, status: 'SENT', attempts: 1, lease_until: null })]);
    } finally {
      release();
      await held.close();
    }
  });

  postgresOnly('two mail jobs racing on the same rows send each message exactly once', async () => {
    const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => queue(`buyer${i}@example.com`)));
    // Each job on its own connection pool, as two worker processes would be.
    const other = openPostgres(database.url!, { max: 5 });
    try {
      const jobs = [
        mailJob(db, { clock, logger, smtpUrl: smtp.url, from, batch: 4 }),
        mailJob(other.db, { clock, logger, smtpUrl: smtp.url, from, batch: 4 }),
      ];
      const drain = async (job: (typeof jobs)[number]) => {
        let total = 0;
        for (let n = await job.runOnce(); n > 0; n = await job.runOnce()) total += n;
        return total;
      };
      const handled = await Promise.all(jobs.map(drain));
      expect(handled[0]! + handled[1]!).toBe(30);
    } finally {
      await other.close();
    }
    const sentIds = smtp.received.map((m) => header(m.raw, 'X-Mail-Id')).sort();
    expect(sentIds).toEqual([...ids].sort());
    expect(new Set((await rows()).map((r) => `${r.status} ${r.attempts}`))).toEqual(new Set(['SENT 1']));
  });
});

describe('without SMTP_URL', () => {
  const run = promisify(execFile);
  const root = join(__dirname, '..', '..');
  const tsx = join(root, 'node_modules', '.bin', 'tsx');
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mdapi-mail-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** The database the CLI will open: this file's PostgreSQL database, or an embedded one in a directory of its own. */
  async function cliDatabase(): Promise<{ handle: DatabaseHandle; env: NodeJS.ProcessEnv }> {
    if (onPostgres) {
      return {
        handle: { ...database, close: async () => undefined },
        env: { ...process.env, DATABASE_URL: database.url, SMTP_URL: '' },
      };
    }
    const dataDir = join(dir, 'pglite');
    const handle = await openEmbedded(dataDir);
    await migrateToLatest(handle.db);
    return { handle, env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir, SMTP_URL: '' } };
  }

  async function cli(env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
    const { stdout } = await run(tsx, [join(root, 'src', 'ops', 'cli-main.ts'), ...args], { env, cwd: root });
    return stdout;
  }

  test('messages are RECORDED, nothing is sent or dropped, and the CLI lists them', async () => {
    const { handle, env } = await cliDatabase();
    let shop: string;
    let otherShop: string;
    let ids: string[];
    try {
      shop = (await admin.createShop(handle.db, { name: 'Recorder' })).id;
      otherShop = (await admin.createShop(handle.db, { name: 'Other' })).id;
      const uow = new UnitOfWork(handle.db, { clock, sinks: [mailSink(clock)] });
      ids = [];
      for (const [s, to] of [
        [shop, 'one@example.com'],
        [otherShop, 'two@example.com'],
      ] as const) {
        await uow.run(origin(s), async (_trx, fx) => fx.mail(mailDraft(to, 'receipt', receipt)));
        ids.push((await emailsOfShop(handle.db, s))[0]!.id);
      }
      const job = mailJob(handle.db, { clock, logger, from });
      expect(await job.runOnce()).toBe(2);
      expect(await job.runOnce()).toBe(0);
      const recorded = await emailsOfShop(handle.db, shop);
      expect(recorded).toEqual([
        expect.objectContaining({
          id: ids[0],
          status: 'RECORDED',
          attempts: 1,
          provider_message_id: null,
          next_attempt_at: null,
          lease_until: null,
        }),
      ]);
      expect(recorded[0]!.html).toContain('&lt;script&gt;'); // the row is the record: the whole message is kept
    } finally {
      await handle.close();
    }

    const all = JSON.parse(await cli(env, 'emails', 'list', '--json')) as Record<string, unknown>[];
    expect(all.filter((e) => ids.includes(e.id as string))).toHaveLength(2);
    const mine = JSON.parse(await cli(env, 'emails', 'list', '--shop', shop, '--json')) as Record<string, unknown>[];
    expect(mine).toEqual([
      {
        id: ids[0],
        shop_id: shop,
        mode: 'live',
        to: 'one@example.com',
        template: 'receipt',
        subject: `Your receipt from Mail Shop (order ${receipt.uniqid})`,
        status: 'RECORDED',
        attempts: 1,
        last_error: null,
        created_at: clock.now().toISOString(),
        sent_at: null,
      },
    ]);
    // The table: a header line and one line per message; never a body.
    const text = await cli(env, 'emails', 'list', '--shop', shop);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^id\s+shop\s+mode\s+to\s+template\s+subject\s+status\s+created_at$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(ids[0]!);
    expect(lines[1]).toMatch(
      /one@example\.com\s+receipt\s+Your receipt from Mail Shop .*\s+RECORDED\s+2026-11-22T10:00:00\.000Z$/,
    );
    expect(text).not.toContain('<script>');
    expect(text).not.toContain('&lt;');
  });
});

// Domain verification against a real DNS server this test starts on 127.0.0.1 (dns2, UDP, a free port), which the
// app reaches through DNS_SERVERS: the record found (VERIFIED, also in two chunks), not found (NXDOMAIN, no TXT,
// another value: PENDING_VERIFICATION with RECORD_NOT_FOUND), the 72-hour FAILED moved by the injectable clock,
// a found record after 72 hours (still VERIFIED), a DNS that does not answer or answers SERVFAIL (never a failure,
// whatever the age), VERIFIED and FAILED domains returned without a look-up, and a hostname another shop verified
// first (409). The race of two shops verifying one hostname at once runs on real PostgreSQL.
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from '../../src/config';
import { ManualClock } from '../../src/platform/clock';
import { bearer, startTestApp, type TestApp } from '../helpers/test-app';

// dns2 ships no types: the little of it this test uses.
interface DnsQuestion {
  name: string;
  type: number;
}
interface DnsPacket {
  questions: DnsQuestion[];
  answers: unknown[];
  header: { rcode: number };
}
interface UdpDnsServer {
  on(event: 'request', handler: (req: DnsPacket, send: (res: DnsPacket) => Promise<unknown>) => void): void;
  listen(port: number, address: string): Promise<void>;
  address(): AddressInfo;
  close(cb?: () => void): void;
}
const dns2 = require('dns2') as {
  createUDPServer(options: { type: 'udp4' }): UdpDnsServer;
  Packet: { TYPE: { TXT: number }; CLASS: { IN: number }; createResponseFromRequest(req: DnsPacket): DnsPacket };
};
const { Packet } = dns2;

/** What the test's DNS server answers: TXT records by name (each record a list of strings), or a mode for all. */
const zone = new Map<string, string[][]>();
/** Names that exist but have no TXT record (NOERROR, no answer) rather than NXDOMAIN. */
const emptyNames = new Set<string>();
let mode: 'answer' | 'silent' | 'servfail' = 'answer';
const queries: string[] = [];

let server: UdpDnsServer;
const clock = new ManualClock(new Date('2026-11-20T00:00:00Z'));
let t: TestApp;
const HOUR = 60 * 60 * 1000;
const TIMEOUT_MS = 600;

beforeAll(async () => {
  server = dns2.createUDPServer({ type: 'udp4' });
  server.on('request', (req, send) => {
    const question = req.questions[0]!;
    queries.push(question.name.toLowerCase());
    if (mode === 'silent') return; // a server that never answers
    const res = Packet.createResponseFromRequest(req);
    if (mode === 'servfail') {
      res.header.rcode = 2;
      void send(res);
      return;
    }
    const records = zone.get(question.name.toLowerCase());
    if (records && question.type === Packet.TYPE.TXT) {
      for (const data of records)
        res.answers.push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data });
    } else if (!records && !emptyNames.has(question.name.toLowerCase())) {
      res.header.rcode = 3; // NXDOMAIN
    }
    void send(res);
  });
  await server.listen(0, '127.0.0.1');
  const port = server.address().port;
  t = await startTestApp({
    clock,
    env: { RATE_LIMIT_PRO: '100000', DNS_SERVERS: `127.0.0.1:${port}`, DNS_TIMEOUT_MS: String(TIMEOUT_MS) },
  });
});
afterAll(async () => {
  await t.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  mode = 'answer';
});

const pgOnly = process.env.DATABASE_URL ? test : test.skip;
let unique = 0;
const uid = () => `${Date.now().toString(36)}${(++unique).toString(36)}`;

interface Shop {
  id: string;
  key: string;
}

async function newShop(): Promise<Shop> {
  const id = await t.createShop({ name: `Domains ${uid()}`, plan: 'pro', currency: 'USD' });
  return { id, key: (await t.createKey(id, ['store.read', 'store.write'])).key };
}

interface Domain {
  id: string;
  domain: string;
  status: string;
  ssl_status: string;
  verification: { type: string; name: string; value: string };
  verified_at: string | null;
  last_checked_at: string | null;
  last_check_error: string | null;
  created_at: string;
}

async function add(s: Shop, domain = `${uid()}.example.com`): Promise<Domain> {
  const res = await t.http.post('/dev/v1/store/domains/additional').set(bearer(s.key)).send({ domain });
  expect(res.status).toBe(201);
  return res.body.data as Domain;
}

const verify = (s: Shop, id: string) =>
  t.http.post(`/dev/v1/store/domains/additional/${id}/verification`).set(bearer(s.key)).send();

const row = (id: string) => t.db.selectFrom('store_domains').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** Publishes the domain's verification record on the test's DNS server. */
const publish = (d: Domain, value = d.verification.value) => zone.set(d.verification.name, [[value]]);

test('found: VERIFIED with verified_at; the look-up went to the DNS server DNS_SERVERS names', async () => {
  const s = await newShop();
  clock.set('2026-11-20T01:00:00Z');
  const d = await add(s);
  publish(d);
  clock.set('2026-11-20T02:00:00Z');
  const before = queries.length;
  const res = await verify(s, d.id);
  expect(res.status).toBe(200);
  expect(res.body.data).toEqual({
    ...d,
    status: 'VERIFIED',
    ssl_status: 'PENDING',
    verified_at: '2026-11-20T02:00:00.000Z',
    last_checked_at: '2026-11-20T02:00:00.000Z',
    last_check_error: null,
  });
  expect(queries.slice(before)).toContain(d.verification.name);
  expect(await row(d.id)).toMatchObject({ status: 'VERIFIED', verified_at: new Date('2026-11-20T02:00:00Z') });
  // Verified: answered as it is, without asking the DNS again, even after the record is gone.
  zone.delete(d.verification.name);
  const asked = queries.length;
  const again = await verify(s, d.id);
  expect(again.status).toBe(200);
  expect(again.body.data).toEqual(res.body.data);
  expect(queries.length).toBe(asked);
});

test('a record split into several strings counts as its joined text; other TXT records beside it are ignored', async () => {
  const s = await newShop();
  const d = await add(s);
  const value = d.verification.value;
  zone.set(d.verification.name, [['v=spf1 -all'], [value.slice(0, 10), value.slice(10)]]);
  expect((await verify(s, d.id)).body.data.status).toBe('VERIFIED');
});

test.each([
  ['NXDOMAIN (no record at all)', (_d: Domain) => undefined],
  ['a name without TXT records', (d: Domain) => void emptyNames.add(d.verification.name)],
  ['only another value', (d: Domain) => void publish(d, 'mdapi-verification=someone-elses-token')],
  ['the value of another domain of the shop', (d: Domain) => void publish(d, `${d.verification.value}x`)],
])('not found (%s): stays PENDING_VERIFICATION with RECORD_NOT_FOUND', async (_name, arrange) => {
  const s = await newShop();
  clock.set('2026-11-20T00:00:00Z');
  const d = await add(s);
  arrange(d);
  clock.set('2026-11-21T00:00:00Z');
  const res = await verify(s, d.id);
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({
    status: 'PENDING_VERIFICATION',
    ssl_status: 'PENDING',
    verified_at: null,
    last_checked_at: '2026-11-21T00:00:00.000Z',
    last_check_error: 'RECORD_NOT_FOUND',
  });
  // Published afterwards: the next check verifies it.
  publish(d);
  expect((await verify(s, d.id)).body.data.status).toBe('VERIFIED');
});

test('72 hours after creation without the record: FAILED (not a minute before); then final, no look-up', async () => {
  const s = await newShop();
  clock.set('2026-11-20T00:00:00Z');
  const d = await add(s);
  clock.set(new Date(Date.parse('2026-11-20T00:00:00Z') + 72 * HOUR - 60_000));
  const early = await verify(s, d.id);
  expect(early.body.data).toMatchObject({ status: 'PENDING_VERIFICATION', last_check_error: 'RECORD_NOT_FOUND' });
  clock.set(new Date(Date.parse('2026-11-20T00:00:00Z') + 72 * HOUR));
  const failed = await verify(s, d.id);
  expect(failed.status).toBe(200);
  expect(failed.body.data).toMatchObject({
    status: 'FAILED',
    ssl_status: 'FAILED',
    verified_at: null,
    last_checked_at: '2026-11-23T00:00:00.000Z',
    last_check_error: 'RECORD_NOT_FOUND',
  });
  // FAILED is final: publishing now changes nothing, and the DNS is not asked.
  publish(d);
  const asked = queries.length;
  expect((await verify(s, d.id)).body.data).toEqual(failed.body.data);
  expect(queries.length).toBe(asked);
  // Adding the hostname again starts over, and that one verifies.
  const fresh = await add(s, d.domain);
  expect(fresh.id).not.toBe(d.id);
  publish(fresh);
  expect((await verify(s, fresh.id)).body.data.status).toBe('VERIFIED');
});

test('found after 72 hours: still VERIFIED (a found record always wins)', async () => {
  const s = await newShop();
  clock.set('2026-11-20T00:00:00Z');
  const d = await add(s);
  clock.advance(100 * HOUR);
  publish(d);
  expect((await verify(s, d.id)).body.data).toMatchObject({ status: 'VERIFIED', last_check_error: null });
});

test.each([
  ['does not answer (timeout)', 'silent' as const],
  ['answers SERVFAIL', 'servfail' as const],
])(
  'a DNS server that %s is not a verification failure: PENDING with DNS_UNAVAILABLE, even past 72 hours',
  async (_name, how) => {
    const s = await newShop();
    clock.set('2026-11-20T00:00:00Z');
    const d = await add(s);
    publish(d); // the record exists, but the server will not say so
    mode = how;
    clock.advance(80 * HOUR);
    const started = Date.now();
    const res = await verify(s, d.id);
    const took = Date.now() - started;
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      status: 'PENDING_VERIFICATION',
      ssl_status: 'PENDING',
      last_check_error: 'DNS_UNAVAILABLE',
      last_checked_at: clock.now().toISOString(),
    });
    // Bounded by DNS_TIMEOUT_MS (plus the request's own work), not by c-ares' defaults.
    expect(took).toBeLessThan(TIMEOUT_MS + 2000);
    // The server back: found.
    mode = 'answer';
    expect((await verify(s, d.id)).body.data.status).toBe('VERIFIED');
  },
);

test('found, but another shop verified the hostname first: 409 CONFLICT, nothing recorded', async () => {
  const a = await newShop();
  const b = await newShop();
  const name = `${uid()}.example.com`;
  const da = await add(a, name);
  const db = await add(b, name);
  // Both records published (the DNS owner tried both shops); B checks first and wins.
  zone.set(da.verification.name, [[da.verification.value], [db.verification.value]]);
  expect((await verify(b, db.id)).body.data.status).toBe('VERIFIED');
  const before = await row(da.id);
  const res = await verify(a, da.id);
  expect(res.status).toBe(409);
  expect(res.body.error.code).toBe('CONFLICT');
  expect(await row(da.id)).toEqual(before);
});

pgOnly('race: two shops verify one hostname at once: exactly one VERIFIED, the other 409', async () => {
  const a = await newShop();
  const b = await newShop();
  const name = `${uid()}.example.com`;
  const da = await add(a, name);
  const db = await add(b, name);
  zone.set(da.verification.name, [[da.verification.value], [db.verification.value]]);
  const results = await Promise.all([verify(a, da.id), verify(b, db.id)]);
  expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
  const rows = await t.db.selectFrom('store_domains').select('status').where('domain', '=', name).execute();
  expect(rows.map((r) => r.status).sort()).toEqual(['PENDING_VERIFICATION', 'VERIFIED']);
});

pgOnly('race: two checks of one domain at once: both answer VERIFIED, one verified_at', async () => {
  const s = await newShop();
  const d = await add(s);
  publish(d);
  const results = await Promise.all([verify(s, d.id), verify(s, d.id)]);
  expect(results.map((r) => r.status)).toEqual([200, 200]);
  expect(results.map((r) => r.body.data.status)).toEqual(['VERIFIED', 'VERIFIED']);
  expect(results[0]!.body.data.verified_at).toBe(results[1]!.body.data.verified_at);
});

test('DNS_SERVERS: ip[:port] entries (IPv6 bracketed with a port); unset is the system resolver; bad ones stop the start', () => {
  expect(loadConfig({}).dnsServers).toEqual([]);
  expect(loadConfig({ DNS_SERVERS: ' ' }).dnsServers).toEqual([]);
  expect(loadConfig({ DNS_SERVERS: '127.0.0.1:5353, 9.9.9.9,[::1]:53,2001:db8::1' }).dnsServers).toEqual([
    '127.0.0.1:5353',
    '9.9.9.9',
    '[::1]:53',
    '2001:db8::1',
  ]);
  for (const bad of ['dns.example.com', '127.0.0.1:0', '127.0.0.1:70000', '300.1.1.1', '127.0.0.1,', '[::1]:x'])
    expect(() => loadConfig({ DNS_SERVERS: bad })).toThrow(ConfigError);
  expect(loadConfig({}).dnsTimeoutMs).toBe(3000);
  expect(() => loadConfig({ DNS_TIMEOUT_MS: '60000' })).toThrow(ConfigError);
});

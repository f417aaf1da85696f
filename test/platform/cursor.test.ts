// The cursor codec alone: what a cursor is bound to, what it hides, and that every alteration is refused.
import crypto, { KeyObject, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { ValidationError } from '../../src/errors';
import { CursorCodec, cursorLifetimeMs, type CursorBinding } from '../../src/platform/cursor';

const start = Date.parse('2026-11-22T03:10:00Z');
let clock = start;
const secret = randomBytes(32);
const codec = new CursorCodec(secret, () => clock);
const binding: CursorBinding = { shopId: 'shop_a', queryHash: CursorCodec.queryHash({ list: 'customers' }) };
const position = { values: ['ada.lovelace@engine.example'], id: 'cus_0196aa6a4c1f27d3a9b1e3e4c5d6f7a8' };

afterEach(() => {
  clock = start;
  jest.restoreAllMocks();
});

/** The 422 the codec throws, as `[message]`; fails when it throws anything else or nothing. */
function rejection(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    expect(e.details).toEqual([{ field: 'query.cursor', message: expect.any(String) }]);
    return e.details?.[0]?.message ?? '';
  }
  throw new Error('the cursor was accepted');
}

test('round trip: the position comes back exactly, whatever text it holds', () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: 'grapheme' }), { maxLength: 3 }),
      fc.string({ minLength: 1 }),
      (values, id) => {
        expect(codec.decode(codec.encode({ values, id }, binding), binding)).toEqual({ values, id });
      },
    ),
    { numRuns: 200 },
  );
});

test('bound to the shop: another shop, or another server secret, cannot open it', () => {
  const cursor = codec.encode(position, binding);
  expect(rejection(() => codec.decode(cursor, { ...binding, shopId: 'shop_b' }))).toMatch(/not a valid cursor/);
  // a prefix or extension of the shop id is another shop too
  expect(rejection(() => codec.decode(cursor, { ...binding, shopId: 'shop_' }))).toMatch(/not a valid cursor/);
  expect(rejection(() => codec.decode(cursor, { ...binding, shopId: 'shop_ab' }))).toMatch(/not a valid cursor/);
  const other = new CursorCodec(randomBytes(32), () => clock);
  expect(rejection(() => other.decode(cursor, binding))).toMatch(/not a valid cursor/);
  // the same secret in another process opens it (every process reads the secret from the database)
  expect(new CursorCodec(Buffer.from(secret), () => clock).decode(cursor, binding)).toEqual(position);
});

test('bound to the list query', () => {
  const cursor = codec.encode(position, binding);
  const otherQuery = { ...binding, queryHash: CursorCodec.queryHash({ list: 'customers', sorts: 'email' }) };
  expect(rejection(() => codec.decode(cursor, otherQuery))).toMatch(/other filters or sorts/);
  // key order does not change the query
  expect(CursorCodec.queryHash({ a: 1, b: [2] })).toEqual(CursorCodec.queryHash({ b: [2], a: 1 }));
});

test('valid for exactly 24 hours on the injected clock', () => {
  const cursor = codec.encode(position, binding);
  clock = start + cursorLifetimeMs;
  expect(codec.decode(cursor, binding)).toEqual(position);
  clock = start + cursorLifetimeMs + 1;
  expect(rejection(() => codec.decode(cursor, binding))).toMatch(/expired/);
});

test('nothing of the position is readable, and equal positions give unlinkable cursors', () => {
  const a = codec.encode(position, binding);
  const b = codec.encode(position, binding);
  expect(a).not.toBe(b);
  for (const cursor of [a, b]) {
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    for (let shift = 0; shift < 4; shift++) {
      const bytes = Buffer.from(cursor.slice(shift), 'base64url');
      for (const secretText of ['ada.lovelace', 'engine.example', position.id, position.id.slice(4), 'shop_a'])
        expect(bytes.includes(secretText)).toBe(false);
    }
  }
});

test('every single-bit change of the bytes, and every character change, is refused', () => {
  const cursor = codec.encode(position, binding);
  const bytes = Buffer.from(cursor, 'base64url');
  for (let bit = 0; bit < bytes.length * 8; bit++) {
    const tampered = Buffer.from(bytes);
    tampered[bit >> 3]! ^= 1 << (bit & 7);
    expect(rejection(() => codec.decode(tampered.toString('base64url'), binding))).toMatch(/not a valid cursor/);
  }
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  for (let at = 0; at < cursor.length; at++) {
    for (const c of alphabet.replace(cursor[at]!, '')) {
      const tampered = cursor.slice(0, at) + c + cursor.slice(at + 1);
      expect(rejection(() => codec.decode(tampered, binding))).toMatch(/not a valid cursor/);
    }
  }
});

test('any string that is not a cursor is a 422, never another error', () => {
  const cursor = codec.encode(position, binding);
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string(),
        fc.string({ unit: 'binary' }),
        fc.base64String(),
        fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('base64url')),
        // a real cursor cut, spliced or extended
        fc.tuple(fc.nat(cursor.length), fc.string({ maxLength: 8 })).map(([at, s]) => cursor.slice(0, at) + s),
        fc.tuple(fc.nat(cursor.length), fc.string({ maxLength: 8 })).map(([at, s]) => s + cursor.slice(at)),
      ),
      (text) => {
        fc.pre(text !== cursor);
        rejection(() => codec.decode(text, binding));
      },
    ),
    { numRuns: 2000 },
  );
  expect(rejection(() => codec.decode('A'.repeat(3000), binding))).toMatch(/not a valid cursor/);
});

test('the key is derived once, not per call, and the cipher gets a KeyObject', () => {
  const derive = jest.spyOn(crypto, 'hkdfSync');
  const importKey = jest.spyOn(crypto, 'createSecretKey');
  const cipher = jest.spyOn(crypto, 'createCipheriv');
  const decipher = jest.spyOn(crypto, 'createDecipheriv');
  const fresh = new CursorCodec(randomBytes(32), () => clock);
  expect(derive).toHaveBeenCalledTimes(1);
  expect(importKey).toHaveBeenCalledTimes(1);
  for (let i = 0; i < 5; i++) fresh.decode(fresh.encode(position, binding), binding);
  expect(derive).toHaveBeenCalledTimes(1);
  expect(importKey).toHaveBeenCalledTimes(1);
  expect(cipher).toHaveBeenCalledTimes(5);
  expect(decipher).toHaveBeenCalledTimes(5);
  for (const call of [...cipher.mock.calls, ...decipher.mock.calls]) expect(call[1]).toBeInstanceOf(KeyObject);
});

describe('the documented format', () => {
  // Built by hand from the layout in src/platform/cursor.ts, with the key derived as documented there.
  const key = Buffer.from(crypto.hkdfSync('sha256', secret, Buffer.alloc(0), 'mdapi cursor aes-256-gcm v1', 32));
  function seal(plain: Buffer, shopId = binding.shopId, version = 1): string {
    const nonce = randomBytes(12);
    const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 });
    cipher.setAAD(Buffer.concat([Buffer.of(version), Buffer.from(shopId)]));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([Buffer.of(version), nonce, body, cipher.getAuthTag()]).toString('base64url');
  }
  const header = (time = start) => {
    const h = Buffer.alloc(6 + 12);
    h.writeUIntBE(time, 0, 6);
    binding.queryHash.copy(h, 6);
    return h;
  };
  const field = (s: string) => {
    const b = Buffer.from(s);
    const length = Buffer.alloc(2);
    length.writeUInt16BE(b.length);
    return Buffer.concat([length, b]);
  };

  test('a cursor built from the layout opens; the codec writes that layout', () => {
    const plain = Buffer.concat([header(), field(position.id), field(position.values[0]!)]);
    expect(codec.decode(seal(plain), binding)).toEqual(position);
    const cursor = codec.encode(position, binding);
    // version + nonce + plaintext + tag: GCM adds no padding
    expect(Buffer.from(cursor, 'base64url').length).toBe(1 + 12 + plain.length + 16);
    expect(Buffer.from(cursor, 'base64url')[0]).toBe(1);
  });

  test('a sealed but malformed plaintext, or another version, is refused', () => {
    const id = field(position.id);
    for (const plain of [
      Buffer.alloc(0),
      header().subarray(0, 17),
      header(), // no id
      Buffer.concat([header(), id.subarray(0, 1)]), // half a length
      Buffer.concat([header(), id.subarray(0, id.length - 1)]), // shorter than its length says
      Buffer.concat([header(), id, Buffer.of(0)]),
    ])
      expect(rejection(() => codec.decode(seal(plain), binding))).toMatch(/not a valid cursor/);
    const good = Buffer.concat([header(), id]);
    expect(codec.decode(seal(good), binding)).toEqual({ id: position.id, values: [] });
    expect(rejection(() => codec.decode(seal(good, binding.shopId, 2), binding))).toMatch(/not a valid cursor/);
  });

  test('a value longer than a length field holds is a programming error, not a cursor', () => {
    expect(() => codec.encode({ id: 'x', values: ['a'.repeat(0x10000)] }, binding)).toThrow('too long');
    expect(
      codec.decode(codec.encode({ id: 'x', values: ['a'.repeat(0xffff)] }, binding), binding).values[0],
    ).toHaveLength(0xffff);
  });
});

// Ids: a prefix and a UUIDv7 (RFC 9562) as 32 hex digits, ordered by creation within one process.
import { idShape, newId } from '../../src/ids';

const hex = (id: string) => id.slice(id.indexOf('_') + 1);

describe('newId', () => {
  it('is the prefix and a version 7, variant 10 UUID whose first 48 bits are the minting millisecond', () => {
    const before = Date.now();
    const id = newId('ord');
    const after = Date.now();
    expect(id).toMatch(idShape('ord'));
    const h = hex(id);
    expect(h[12]).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(h[16]);
    const ms = parseInt(h.slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });

  it('keeps creation order and never repeats, many to a millisecond and across the random pool refills', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('evt'));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draws fresh random bits: two ids of one millisecond differ beyond the counter', () => {
    const a = hex(newId('aud'));
    const b = hex(newId('aud'));
    expect(a.slice(22)).not.toBe(b.slice(22));
  });
});

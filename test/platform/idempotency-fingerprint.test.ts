// The pure parts of idempotency: which key a request names, and when two requests are "the same".
import { renderResult } from '../../src/http/idempotency';
import { canonicalJson, idempotencyKeyOf, requestFingerprint } from '../../src/platform/idempotency';
import { ValidationError } from '../../src/errors';

describe('canonicalJson', () => {
  test('sorts keys at every level and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });
  test('drops undefined properties like JSON does; undefined body is null', () => {
    expect(canonicalJson({ a: undefined, b: 'x' })).toBe('{"b":"x"}');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson([undefined])).toBe('[null]');
  });
  test('escapes keys and strings', () => {
    expect(canonicalJson({ 'a"b': 'c\n' })).toBe('{"a\\"b":"c\\n"}');
  });
});

describe('requestFingerprint', () => {
  test('ignores key order, not values, method, path or query', () => {
    const base = requestFingerprint('post', '/dev/v1/x', { q: '1', r: '2' }, { a: 1, b: 2 });
    expect(requestFingerprint('POST', '/dev/v1/x', { r: '2', q: '1' }, { b: 2, a: 1 })).toBe(base);
    expect(requestFingerprint('POST', '/dev/v1/x', { q: '1', r: '2' }, { a: 1, b: 3 })).not.toBe(base);
    expect(requestFingerprint('PUT', '/dev/v1/x', { q: '1', r: '2' }, { a: 1, b: 2 })).not.toBe(base);
    expect(requestFingerprint('POST', '/dev/v1/y', { q: '1', r: '2' }, { a: 1, b: 2 })).not.toBe(base);
    expect(requestFingerprint('POST', '/dev/v1/x', { q: '1', r: '3' }, { a: 1, b: 2 })).not.toBe(base);
    expect(requestFingerprint('POST', '/dev/v1/x', { q: '1' }, { a: 1, b: 2 })).not.toBe(base);
    expect(base).toMatch(/^[0-9a-f]{64}$/);
  });
  test('no query is the same as an empty one', () => {
    expect(requestFingerprint('POST', '/p', undefined, { a: 1 })).toBe(requestFingerprint('POST', '/p', {}, { a: 1 }));
  });
  test('a string body is not the same as the JSON it contains', () => {
    expect(requestFingerprint('POST', '/p', {}, '{"a":1}')).not.toBe(requestFingerprint('POST', '/p', {}, { a: 1 }));
  });
});

describe('idempotencyKeyOf', () => {
  test('either header, or both when equal', () => {
    expect(idempotencyKeyOf({})).toBeUndefined();
    expect(idempotencyKeyOf({ 'idempotency-key': 'k' })).toBe('k');
    expect(idempotencyKeyOf({ 'x-idempotency-key': 'k' })).toBe('k');
    expect(idempotencyKeyOf({ 'idempotency-key': 'k', 'x-idempotency-key': 'k' })).toBe('k');
  });
  test('both with different values, or a bad length: 422', () => {
    expect(() => idempotencyKeyOf({ 'idempotency-key': 'a', 'x-idempotency-key': 'b' })).toThrow(ValidationError);
    expect(() => idempotencyKeyOf({ 'idempotency-key': '' })).toThrow(ValidationError);
    expect(() => idempotencyKeyOf({ 'x-idempotency-key': 'x'.repeat(129) })).toThrow(ValidationError);
    expect(idempotencyKeyOf({ 'idempotency-key': 'x'.repeat(128) })).toHaveLength(128);
  });
});

describe('renderResult', () => {
  test('envelopes data, sends page and raw as is, keeps only replayable headers', () => {
    expect(
      renderResult({
        status: 201,
        data: { a: 1 },
        headers: { Location: '/x', 'X-Request-Id': 'r', 'X-RateLimit-Limit': '5' },
      }),
    ).toEqual({
      status: 201,
      headers: { Location: '/x' },
      body: '{"data":{"a":1}}',
    });
    expect(renderResult({ raw: { access_token: 't' } })).toEqual({
      status: 200,
      headers: {},
      body: '{"access_token":"t"}',
    });
  });
});

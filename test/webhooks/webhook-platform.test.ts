// The pieces of webhook delivery that need no network: the event names against the contract, the retry schedule
// with its jitter, the signature format, and the box that keeps signing secrets encrypted.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { webhookEventTypes } from '../../src/domain/webhooks/webhooks';
import { SecretBox } from '../../src/platform/secret-box';
import { newWebhookSecret, signatureHeader } from '../../src/platform/webhook-signature';
import { loadSpec } from '../../src/spec';
import { JITTER, MAX_ATTEMPTS, retryDelayMs, retrySchedule } from '../../src/worker/webhook-delivery';

test('the event names are exactly the contract’s WebhookEventType', () => {
  expect([...webhookEventTypes].sort()).toEqual([...loadSpec().components.schemas.WebhookEventType.enum].sort());
});

describe('retry schedule', () => {
  test('5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: 8 attempts, then none', () => {
    const noJitter = () => 0.5;
    expect(retrySchedule.map((_, i) => retryDelayMs(i + 1, noJitter))).toEqual([
      5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
    ]);
    expect(MAX_ATTEMPTS).toBe(8);
    expect(retryDelayMs(8, noJitter)).toBeUndefined();
  });

  test('jitter stays within ±10% and reaches both ends', () => {
    expect(retryDelayMs(2, () => 0)).toBe(300_000 * (1 - JITTER));
    expect(retryDelayMs(2, () => 0.999999)).toBeCloseTo(300_000 * (1 + JITTER), -1);
    for (let i = 0; i < 200; i++) {
      const d = retryDelayMs(3)!;
      expect(d).toBeGreaterThanOrEqual(1_800_000 * 0.9);
      expect(d).toBeLessThanOrEqual(1_800_000 * 1.1);
    }
  });
});

describe('signatures', () => {
  test('standardwebhooks verifies ours, with one secret and with two', () => {
    const [a, b] = [newWebhookSecret(), newWebhookSecret()];
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = '{"event":"order:paid","data":{"total":19.99}}';
    const ts = Math.floor(Date.now() / 1000);
    const headers = (sig: string) => ({
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(ts),
      'webhook-signature': sig,
    });
    expect(new Webhook(a).verify(body, headers(signatureHeader([a], 'evt_1', ts, body)))).toEqual(JSON.parse(body));
    const both = signatureHeader([a, b], 'evt_1', ts, body);
    expect(both.split(' ')).toHaveLength(2);
    expect(() => new Webhook(b).verify(body, headers(both))).not.toThrow();
    expect(() => new Webhook(b).verify(body, headers(signatureHeader([a], 'evt_1', ts, body)))).toThrow();
    expect(() => new Webhook(a).verify(`${body} `, headers(signatureHeader([a], 'evt_1', ts, body)))).toThrow();
  });
});

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  test('opens what it sealed, only with the same context, and never holds the secret in clear', () => {
    const secret = newWebhookSecret();
    const sealed = box.seal(secret, 'webhook-endpoint:shop_a:whe_1');
    expect(sealed.toString('latin1')).not.toContain(secret);
    expect(box.open(sealed, 'webhook-endpoint:shop_a:whe_1')).toBe(secret);
    expect(() => box.open(sealed, 'webhook-endpoint:shop_b:whe_1')).toThrow();
    expect(box.seal(secret, 'x').equals(box.seal(secret, 'x'))).toBe(false);
  });

  test('a changed byte or another key is refused', () => {
    const sealed = box.seal('whsec_x', 'c');
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1]! ^= 1;
    expect(() => box.open(tampered, 'c')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'c')).toThrow();
    expect(() => new SecretBox(randomBytes(16))).toThrow();
  });
});

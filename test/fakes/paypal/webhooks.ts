// The fake's webhook side: events built as PayPal builds them (the `event` envelope around an order, capture,
// refund or dispute), each signed afresh at every send, sent to the account's URL and retried a few times on a
// non-2xx answer with a short delay, or held while the tests say the endpoint is down. Every transmission is kept,
// so verify-webhook-signature can check the bytes it signed, as PayPal does.
import { randomBytes } from 'node:crypto';
import type { FakeWebhook } from '../provider-fake';
import { type Account, now, paypalId } from './model';
import { authAlgo, newKeys, type SigningKeys, transmit } from './signing';

// RSA key pairs take a while to make: one pair of them per process serves every fake. Sharing them loses nothing a
// test relies on: the signed string holds the webhook id, and each fake's accounts have their own.
let keys: { real: SigningKeys; stranger: SigningKeys } | undefined;
function processKeys(): { real: SigningKeys; stranger: SigningKeys } {
  keys ??= { real: newKeys(), stranger: newKeys() };
  return keys;
}

export interface WebhookOptions {
  /** Sends per event before giving up (PayPal retries for days; tests cannot wait). */
  attempts: number;
  retryDelayMs: number;
}

interface Sent {
  hook: FakeWebhook;
  account: Account;
}

export interface TransmissionRecord {
  body: string;
  webhookId: string;
}

export class WebhookOutbox {
  /** The key every real transmission is signed with; its public half is served at the cert URL. */
  readonly keys: SigningKeys = processKeys().real;
  /** A key no one publishes: what a "bad signature" is signed with. */
  private readonly strangerKeys: SigningKeys = processKeys().stranger;
  readonly transmissions = new Map<string, TransmissionRecord>();
  private readonly sent: Sent[] = [];
  private readonly held: Sent[] = [];
  private holding = false;
  private readonly inflight = new Set<Promise<unknown>>();
  readonly certName = `CERT-360caa42-fca2a594-${randomBytes(4).toString('hex')}`;

  constructor(
    private readonly certUrlFor: (livemode: boolean) => string,
    private readonly options: WebhookOptions,
  ) {}

  all(): FakeWebhook[] {
    return this.sent.map((s) => s.hook);
  }

  /** Builds an event and sends it (unless held, or `send` is false): the event is recorded either way. */
  emit(
    account: Account,
    eventType: string,
    resourceType: string,
    resource: Record<string, unknown>,
    summary: string,
    base: string,
    send: boolean,
  ): Sent {
    const id = `WH-${paypalId(17)}-${paypalId(17)}`;
    const event = {
      id,
      create_time: now(),
      resource_type: resourceType,
      event_type: eventType,
      summary,
      resource,
      resource_version: '2.0',
      event_version: '1.0',
      links: [
        { href: `${base}/v1/notifications/webhooks-events/${id}`, rel: 'self', method: 'GET' },
        { href: `${base}/v1/notifications/webhooks-events/${id}/resend`, rel: 'resend', method: 'POST' },
      ],
    };
    const hook: FakeWebhook = {
      eventId: id,
      type: eventType,
      body: JSON.stringify(event),
      headers: {},
      url: account.webhookUrl ?? '',
      sends: [],
    };
    const record = { hook, account };
    this.sent.push(record);
    if (send) this.dispatch(record);
    return record;
  }

  private dispatch(record: Sent): void {
    if (this.holding) {
      this.held.push(record);
      return;
    }
    const delivery = this.deliver(record, this.options.attempts);
    this.inflight.add(delivery);
    void delivery.finally(() => this.inflight.delete(delivery));
  }

  hold(hold: boolean): void {
    this.holding = hold;
    if (!hold) for (const record of this.held.splice(0)) this.dispatch(record);
  }

  /** Resolves when every send under way (with its retries) is over. */
  async settled(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  async resend(eventId: string, tamper: 'bad-signature' | 'stale' | undefined): Promise<number> {
    const record = this.sent.find((s) => s.hook.eventId === eventId);
    if (!record) throw new Error(`no webhook ${eventId}`);
    return this.deliver(record, 1, tamper);
  }

  private headersFor(record: Sent, tamper: 'bad-signature' | 'stale' | undefined): Record<string, string> {
    const time = tamper === 'stale' ? new Date(Date.now() - 3600_000) : new Date();
    const keys = tamper === 'bad-signature' ? this.strangerKeys : this.keys;
    const t = transmit(keys, record.account.webhookId, record.hook.body, time);
    this.transmissions.set(t.transmissionId, { body: record.hook.body, webhookId: record.account.webhookId });
    return {
      'Content-Type': 'application/json',
      'PAYPAL-AUTH-ALGO': authAlgo,
      'PAYPAL-CERT-URL': this.certUrlFor(record.account.livemode),
      'PAYPAL-TRANSMISSION-ID': t.transmissionId,
      'PAYPAL-TRANSMISSION-SIG': t.signature,
      'PAYPAL-TRANSMISSION-TIME': t.time,
    };
  }

  private async deliver(record: Sent, attempts: number, tamper?: 'bad-signature' | 'stale'): Promise<number> {
    const url = record.account.webhookUrl;
    if (!url) return 0;
    record.hook.url = url;
    let status = 0;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      // A fresh transmission (id, time, signature) at every send, as PayPal's retries are.
      const headers = this.headersFor(record, tamper);
      record.hook.headers = headers;
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers,
          body: record.hook.body,
          signal: AbortSignal.timeout(5000),
        });
        await response.arrayBuffer();
        status = response.status;
      } catch {
        status = 0;
      }
      record.hook.sends.push(status);
      if (status >= 200 && status < 300) return status;
      if (attempt < attempts) await new Promise((resolve) => setTimeout(resolve, this.options.retryDelayMs));
    }
    return status;
  }
}

// BTCPay's webhook deliveries as WebhookSender does them: the event serialised as indented JSON, signed
// `BTCPay-Sig: sha256=<hex HMAC-SHA256(body, secret)>`, POSTed; a 5xx, 429, 408 or no answer is redelivered (a new
// deliveryId, `isRedelivery: true`, `originalDeliveryId` kept, so a fresh body and signature each time), any other
// status is final. BTCPay waits 10 s, 1 min, then 10 min between tries; the fake waits milliseconds.
import { createHmac } from 'node:crypto';
import type { FakeWebhook } from '../provider-fake';
import { base58Id, type FakeStore } from './state';

export interface Delivery extends FakeWebhook {
  storeId: string;
  /** The event without its delivery fields (deliveryId, webhookId, originalDeliveryId, isRedelivery, timestamp). */
  event: Record<string, unknown>;
  timestamp: number;
}

export interface WebhookSenderOptions {
  /** Waits between automatic tries (ms); their count is the number of redeliveries. */
  retryDelaysMs: number[];
  /** Each body sent is checked against the document's event schema; violations land here. */
  check(type: string, body: unknown): void;
}

function sign(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class WebhookSender {
  readonly deliveries: Delivery[] = [];
  private held = false;
  private readonly queue: Delivery[] = [];
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: WebhookSenderOptions) {}

  /** Builds an event for a store's webhook and sends it (or queues it while held). */
  emit(store: FakeStore, type: string, event: Record<string, unknown>): Delivery {
    const deliveryId = base58Id(22);
    const delivery: Delivery = {
      eventId: deliveryId,
      type,
      body: '',
      headers: {},
      url: store.webhook.url ?? '',
      sends: [],
      storeId: store.id,
      event: { type, storeId: store.id, ...event },
      timestamp: Math.floor(Date.now() / 1000),
    };
    this.body(store, delivery, deliveryId, false);
    this.deliveries.push(delivery);
    if (this.held || !store.webhook.url) this.queue.push(delivery);
    else this.track(this.sendWithRetries(store, delivery));
    return delivery;
  }

  hold(hold: boolean, storeOf: (delivery: Delivery) => FakeStore): void {
    this.held = hold;
    if (hold) return;
    for (const delivery of this.queue.splice(0)) {
      const store = storeOf(delivery);
      delivery.url = store.webhook.url ?? '';
      if (delivery.url) this.track(this.sendWithRetries(store, delivery));
      else this.queue.push(delivery);
    }
  }

  /**
   * A redelivery as the dashboard's "Redeliver" makes one (new deliveryId, same originalDeliveryId), or tampered:
   * 'bad-signature' signs with another secret; 'stale' replays the last bytes and signature as they were.
   */
  async resend(store: FakeStore, delivery: Delivery, tamper?: 'bad-signature' | 'stale'): Promise<number> {
    if (tamper === 'stale') return this.post(delivery, delivery.body, delivery.headers);
    this.body(store, delivery, base58Id(22), true);
    const headers =
      tamper === 'bad-signature'
        ? { ...delivery.headers, 'BTCPay-Sig': sign(delivery.body, 'not-the-secret') }
        : delivery.headers;
    return this.post(delivery, delivery.body, headers);
  }

  /** Waits for every automatic send under way (tests settle before asserting). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private track(promise: Promise<void>): void {
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise));
  }

  private body(store: FakeStore, delivery: Delivery, deliveryId: string, redelivery: boolean): void {
    const event = {
      deliveryId,
      webhookId: store.webhook.id,
      originalDeliveryId: delivery.eventId,
      isRedelivery: redelivery,
      ...delivery.event,
      timestamp: delivery.timestamp,
    };
    // Newtonsoft's Formatting.Indented: two spaces.
    delivery.body = JSON.stringify(event, null, 2);
    delivery.headers = { 'Content-Type': 'application/json', 'BTCPay-Sig': sign(delivery.body, store.webhook.secret) };
    this.options.check(delivery.type, event);
  }

  private async sendWithRetries(store: FakeStore, delivery: Delivery): Promise<void> {
    let status = await this.post(delivery, delivery.body, delivery.headers);
    for (const delay of this.options.retryDelaysMs) {
      if (!(status === 0 || status === 408 || status === 429 || status >= 500)) return;
      await wait(delay);
      if (this.held) {
        this.queue.push(delivery);
        return;
      }
      this.body(store, delivery, base58Id(22), true);
      status = await this.post(delivery, delivery.body, delivery.headers);
    }
  }

  private async post(delivery: Delivery, body: string, headers: Record<string, string>): Promise<number> {
    let status: number;
    try {
      const response = await fetch(delivery.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      status = response.status;
    } catch {
      status = 0; // no answer: BTCPay redelivers
    }
    delivery.sends.push(status);
    return status;
  }
}

// Stripe's webhook sender: the event as Stripe serialises it, a Stripe-Signature made by stripe-node's own test
// signer (a fresh timestamp at every send, as Stripe does), and retries on any non-2xx answer, quickly, so tests do
// not wait. A held endpoint ("down") keeps its deliveries until released.
import Stripe from 'stripe';
import type { FakeWebhook } from '../provider-fake';

export interface Delivery {
  webhook: FakeWebhook;
  secret: string;
}

export class WebhookSender {
  private held: Delivery[] = [];
  private holding = false;
  private inFlight = new Set<Promise<void>>();

  constructor(
    private readonly attempts: number,
    private readonly retryDelayMs: number,
  ) {}

  /** Signs and posts once; the status our receiver answered (0: no answer). */
  async sendOnce(delivery: Delivery, options: { secret?: string; timestamp?: number } = {}): Promise<number> {
    const { webhook } = delivery;
    const header = Stripe.webhooks.generateTestHeaderString({
      payload: webhook.body,
      secret: options.secret ?? delivery.secret,
      timestamp: options.timestamp ?? Math.floor(Date.now() / 1000),
    });
    webhook.headers = { 'Stripe-Signature': header, 'Content-Type': 'application/json; charset=utf-8' };
    let status: number;
    try {
      const response = await fetch(webhook.url, {
        method: 'POST',
        headers: { ...webhook.headers, 'User-Agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
        body: webhook.body,
        signal: AbortSignal.timeout(5000),
      });
      status = response.status;
      await response.arrayBuffer();
    } catch {
      status = 0;
    }
    webhook.sends.push(status);
    return status;
  }

  /** Delivers with Stripe's retries (compressed in time), or holds it while the endpoint is "down". */
  deliver(delivery: Delivery): Promise<void> {
    if (this.holding) {
      this.held.push(delivery);
      return Promise.resolve();
    }
    const run = (async () => {
      for (let attempt = 1; attempt <= this.attempts; attempt++) {
        const status = await this.sendOnce(delivery);
        if (status >= 200 && status < 300) return;
        if (attempt < this.attempts) await new Promise((r) => setTimeout(r, this.retryDelayMs));
      }
    })();
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
    return run;
  }

  async hold(hold: boolean): Promise<void> {
    this.holding = hold;
    if (hold) return;
    const released = this.held;
    this.held = [];
    await Promise.all(released.map((d) => this.deliver(d)));
  }

  /** Waits for deliveries still retrying (close() must not leave timers behind). */
  async settle(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }
}

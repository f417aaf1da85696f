// `npm run -s fake:stripe -- --port 12111 --webhook-url URL [--mode live|test]`: the Stripe fake of the tests as a
// process of its own, so a live-mode payment can be walked by hand (README): it prints the account's credentials
// (for `gateway connect stripe`) and serves Stripe's API and hosted page until stopped.
import { parseArgs } from 'node:util';
import { StripeFake } from './index';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '12111' },
    'webhook-url': { type: 'string' },
    mode: { type: 'string', default: 'live' },
  },
});

async function main(): Promise<void> {
  const fake = await new StripeFake({ webhookAttempts: 8, webhookRetryDelayMs: 2000 }).listen(Number(values.port));
  const credentials = fake.createAccount({ livemode: values.mode !== 'test', webhookUrl: values['webhook-url'] });
  process.stdout.write(
    `Stripe fake on ${fake.baseUrl} (${values.mode} account); webhooks to ${values['webhook-url'] ?? '(none)'}\n` +
      `export GATEWAY_BASE_URLS=STRIPE=${fake.baseUrl}\n` +
      Object.entries(credentials)
        .map(([k, v]) => `export ${k}=${v}\n`)
        .join(''),
  );
}

void main();

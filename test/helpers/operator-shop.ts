// A shop made ready as an operator does with the CLI, for the topology tests that then run the server and workers
// as processes of their own: live and test keys, the same fixtures in both modes, a webhook endpoint and an OAuth
// app. Every command must succeed (the test fails on the first that does not, with what it printed).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cli, CliResult } from './cli';

export interface OperatorShop {
  key: string;
  testKey: string;
  /** The seeded product ids, in the fixtures' order, live and test. */
  products: string[];
  testProducts: string[];
  app: { client_id: string; client_secret: string };
}

export function succeeded(r: CliResult): CliResult {
  expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
  return r;
}

/**
 * Run one after another: an in-process CLI captures this process's console while it runs. `dir` receives the
 * fixture file; the app may ask for `orders.read` and redirects to https://app.example.com/cb.
 */
export async function equipShop(
  cli: Cli,
  shopId: string,
  options: { dir: string; fixtures: object; webhookUrl: string; events: string[]; appName: string },
): Promise<OperatorShop> {
  const fixtures = join(options.dir, `fixtures-${shopId}.json`);
  writeFileSync(fixtures, JSON.stringify(options.fixtures));
  const live = succeeded(await cli('key', 'create', '--shop', shopId, '--scopes', '*'));
  const test = succeeded(await cli('key', 'create', '--shop', shopId, '--mode', 'test', '--scopes', '*'));
  const seeded = succeeded(await cli('seed', '--shop', shopId, '--file', fixtures));
  const seededTest = succeeded(await cli('seed', '--shop', shopId, '--mode', 'test', '--file', fixtures));
  succeeded(
    await cli('webhook', 'create', '--shop', shopId, '--url', options.webhookUrl, '--events', options.events.join(',')),
  );
  const app = succeeded(
    await cli(
      'app',
      'create',
      '--name',
      options.appName,
      '--redirect-uris',
      'https://app.example.com/cb',
      '--scopes',
      'orders.read',
    ),
  );
  return {
    key: live.json.key,
    testKey: test.json.key,
    products: seeded.json.products,
    testProducts: seededTest.json.products,
    app: app.json,
  };
}

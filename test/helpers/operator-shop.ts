// A shop made ready as an operator does with the CLI, for the topology tests that then run the server and workers
// as processes of their own: live and test keys, the same fixtures in both modes, a webhook endpoint and an OAuth
// app. Every command must succeed (the test fails on the first that does not, with what it printed).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { send, type Outcome } from '../faults/load';
import type { Cli, CliResult } from './cli';
import { assertMatchesContract } from './contract';

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

/** POST /oauth/authorize on a running server, approved with the shop's key: the answer and the code it carries. */
export async function approveCode(
  base: string,
  key: string,
  app: OperatorShop['app'],
): Promise<{ approved: Outcome; code: string | null }> {
  const approved = await send(base, {
    kind: 'authorize',
    method: 'post',
    path: '/dev/v1/oauth/authorize',
    key,
    body: {
      response_type: 'code',
      client_id: app.client_id,
      redirect_uri: 'https://app.example.com/cb',
      scope: 'orders.read',
      state: 'st',
    },
  });
  const redirect = approved.data?.redirect_url;
  return { approved, code: redirect ? new URL(String(redirect)).searchParams.get('code') : null };
}

/** POST /oauth/token exchanging `code` on a running server, as a standard client sends it; checked against the contract. */
export async function exchangeCode(
  base: string,
  app: OperatorShop['app'],
  code: string,
): Promise<{ status: number; accessToken?: string }> {
  const res = await fetch(`${base}/dev/v1/oauth/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: 'https://app.example.com/cb',
    }).toString(),
  });
  const text = await res.text();
  const body = JSON.parse(text) as { access_token?: string };
  assertMatchesContract('post', '/dev/v1/oauth/token', {
    status: res.status,
    headers: Object.fromEntries(res.headers),
    body,
    text,
  });
  return { status: res.status, accessToken: body.access_token };
}

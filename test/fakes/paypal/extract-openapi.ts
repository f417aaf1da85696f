// Refreshes the pinned PayPal document the fake is held to: test/fixtures/providers/paypal/openapi.json.
//
// PayPal publishes one OpenAPI file per API (paypal/paypal-rest-api-specifications, openapi/*.json), each with its
// own `components` whose names collide (every file has its `error_400`, `money`, `capture`...). We keep only the
// operations our adapter and fake touch, plus the webhook resources the fake sends, and the closure of their
// `$ref`s, each component renamed `<api>__<name>` so the four files fit in one document the checker can load.
//
//   npx tsx test/fakes/paypal/extract-openapi.ts <bare git dir of paypal-rest-api-specifications> [commit]
//
// The OAuth token endpoint (POST /v1/oauth2/token) is in none of PayPal's files: it is described by hand in
// oauth2-token.openapi.json beside the fixture, not here.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prettier from 'prettier';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface Selection {
  /** Prefix of the file's components in the merged document. */
  prefix: string;
  file: string;
  /** path -> methods kept */
  operations: Record<string, string[]>;
  /** Schemas kept though no kept operation names them: the resources of the webhook events the fake sends. */
  schemas: string[];
}

const selections: Selection[] = [
  {
    prefix: 'orders',
    file: 'openapi/checkout_orders_v2.json',
    operations: {
      '/v2/checkout/orders': ['post'],
      '/v2/checkout/orders/{id}': ['get'],
      '/v2/checkout/orders/{id}/capture': ['post'],
    },
    schemas: [],
  },
  {
    prefix: 'payments',
    file: 'openapi/payments_payment_v2.json',
    operations: { '/v2/payments/captures/{capture_id}/refund': ['post'] },
    // capture-2 is the capture as PAYMENT.CAPTURE.* events carry it (with supplementary_data.related_ids.order_id);
    // refund is PAYMENT.CAPTURE.REFUNDED's resource.
    schemas: ['capture-2', 'refund'],
  },
  {
    prefix: 'webhooks',
    file: 'openapi/notifications_webhooks_v1.json',
    operations: {
      '/v1/notifications/verify-webhook-signature': ['post'],
      // Connect time: the webhook_id given must be one of the app's webhooks, posting to the shop's route.
      '/v1/notifications/webhooks/{webhook_id}': ['get'],
    },
    // The envelope of every event the fake sends.
    schemas: ['event'],
  },
  {
    prefix: 'disputes',
    file: 'openapi/customer_disputes_v1.json',
    operations: {},
    // CUSTOMER.DISPUTE.CREATED / RESOLVED's resource.
    schemas: ['dispute'],
  },
];

const componentKinds = ['schemas', 'parameters', 'responses', 'requestBodies'] as const;
type ComponentKind = (typeof componentKinds)[number];

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function refTarget(ref: string): { kind: ComponentKind; name: string } {
  const match = /^#\/components\/([^/]+)\/(.+)$/.exec(ref);
  if (!match || !(componentKinds as readonly string[]).includes(match[1]!)) {
    throw new Error(`unsupported $ref ${ref}`);
  }
  return { kind: match[1] as ComponentKind, name: match[2]! };
}

/** A deep copy of `node` with every local $ref renamed into the prefix, recording what it reached. */
function rewrite(node: Json, prefix: string, reached: (kind: ComponentKind, name: string) => void): Json {
  if (Array.isArray(node)) return node.map((item) => rewrite(item, prefix, reached));
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string') {
      const { kind, name } = refTarget(value);
      reached(kind, name);
      out[key] = `#/components/${kind}/${prefix}__${name}`;
    } else {
      out[key] = rewrite(value, prefix, reached);
    }
  }
  return out;
}

function gitShow(gitDir: string, commit: string, path: string): string {
  return execFileSync('git', ['--git-dir', gitDir, 'show', `${commit}:${path}`], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
}

function gitBlobSha(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  return createHash('sha1')
    .update(Buffer.concat([Buffer.from(`blob ${bytes.length}\0`), bytes]))
    .digest('hex');
}

async function main(): Promise<void> {
  const gitDir = process.argv[2];
  if (!gitDir) throw new Error('usage: extract-openapi.ts <git dir of paypal-rest-api-specifications> [commit]');
  const commit = execFileSync('git', ['--git-dir', gitDir, 'rev-parse', process.argv[3] ?? 'HEAD'], {
    encoding: 'utf8',
  }).trim();
  const date = execFileSync('git', ['--git-dir', gitDir, 'show', '-s', '--format=%cI', commit], {
    encoding: 'utf8',
  }).trim();

  const paths: JsonObject = {};
  const components: Record<ComponentKind | 'securitySchemes', JsonObject> = {
    schemas: {},
    parameters: {},
    responses: {},
    requestBodies: {},
    securitySchemes: {},
  };
  const scopes: JsonObject = {};
  const files: JsonObject[] = [];

  for (const selection of selections) {
    const text = gitShow(gitDir, commit, selection.file);
    const doc = JSON.parse(text) as JsonObject;
    const sourceComponents = doc.components as JsonObject;
    const pending: { kind: ComponentKind; name: string }[] = [];
    const reached = (kind: ComponentKind, name: string): void => {
      pending.push({ kind, name });
    };

    for (const [path, methods] of Object.entries(selection.operations)) {
      const item = (doc.paths as JsonObject)[path];
      if (!isObject(item)) throw new Error(`${selection.file}: no path ${path}`);
      const kept: JsonObject = {};
      if (item.parameters) kept.parameters = rewrite(item.parameters, selection.prefix, reached);
      for (const method of methods) {
        const operation = item[method];
        if (!isObject(operation)) throw new Error(`${selection.file}: no ${method} ${path}`);
        kept[method] = rewrite(operation, selection.prefix, reached);
      }
      paths[path] = kept;
    }
    for (const name of selection.schemas) pending.push({ kind: 'schemas', name });

    while (pending.length > 0) {
      const { kind, name } = pending.pop()!;
      const target = components[kind];
      const key = `${selection.prefix}__${name}`;
      if (key in target) continue;
      const source = (sourceComponents[kind] as JsonObject | undefined)?.[name];
      if (source === undefined) throw new Error(`${selection.file}: no components.${kind}.${name}`);
      target[key] = null; // claimed before the walk, so a cycle stops here
      target[key] = rewrite(source, selection.prefix, reached);
    }

    // One Oauth2 scheme: every file declares the same client-credentials flow, with its own scopes.
    const oauth = (sourceComponents.securitySchemes as JsonObject).Oauth2 as JsonObject;
    const flow = (oauth.flows as JsonObject).clientCredentials as JsonObject;
    Object.assign(scopes, flow.scopes as JsonObject);

    files.push({
      path: selection.file,
      blobSha: gitBlobSha(text),
      title: (doc.info as JsonObject).title as string,
      version: (doc.info as JsonObject).version as string,
      keptOperations: Object.entries(selection.operations).flatMap(([path, methods]) =>
        methods.map((method) => `${method.toUpperCase()} ${path}`),
      ),
      keptSchemaRoots: selection.schemas,
      componentPrefix: `${selection.prefix}__`,
    });
  }

  components.securitySchemes.Oauth2 = {
    type: 'oauth2',
    description: 'OAuth 2.0 client credentials (POST /v1/oauth2/token).',
    flows: { clientCredentials: { tokenUrl: '/v1/oauth2/token', scopes } },
  };

  const extract = {
    openapi: '3.0.3',
    info: {
      title: 'PayPal REST APIs used by the PayPal adapter (pinned extract)',
      version: commit.slice(0, 12),
      description:
        'Extracted by test/fakes/paypal/extract-openapi.ts from paypal/paypal-rest-api-specifications; see source.json.',
    },
    servers: [{ url: 'https://api-m.sandbox.paypal.com' }, { url: 'https://api-m.paypal.com' }],
    paths,
    components,
  };

  const out = join(__dirname, '../../fixtures/providers/paypal');
  // Written as the repository's prettier writes JSON, so `npm run lint` holds the fixture too.
  const write = async (name: string, value: unknown): Promise<void> => {
    const file = join(out, name);
    const options = (await prettier.resolveConfig(file)) ?? {};
    writeFileSync(file, await prettier.format(JSON.stringify(value), { ...options, filepath: file }));
  };
  await write('openapi.json', extract);
  await write('source.json', {
    repo: 'paypal/paypal-rest-api-specifications',
    commit,
    date,
    files,
    kept:
      'The operations listed per file, the webhook resource schemas listed per file, and the closure of their ' +
      '$refs; components renamed <api>__<name>. POST /v1/oauth2/token is in no published file: it is ' +
      'hand-written in oauth2-token.openapi.json.',
  });
  console.log(`wrote ${Object.keys(paths).length} paths, ${Object.keys(components.schemas).length} schemas`);
}

void main();

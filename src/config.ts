// Environment -> typed, validated configuration. A bad value stops the process at start with a clear message
// rather than misbehaving later.
import { gatewayBaseUrlNames, type GatewayBaseUrlName } from './integrations/gateway-provider';
import { parseBaseUrls } from './platform/base-urls';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import type { EmailMarketingProvider } from '../db/tables';
import { parseProviderBaseUrls } from './platform/email-marketing-providers';

export type Plan = 'free' | 'pro' | 'business';
export const plans: readonly Plan[] = ['free', 'pro', 'business'];

export interface Config {
  port: number;
  host: string;
  /** Absolute base address used in links the API returns (doc_url, checkout_url). */
  publicUrl: string;
  /** Base of the hosted checkout links (`{checkoutBaseUrl}/invoice/<uniqid>`); defaults to publicUrl. */
  checkoutBaseUrl: string;
  /** A PENDING order older than this is voided by the worker and its reserved stock released. */
  orderTtlMinutes: number;
  databaseUrl: string | undefined;
  /**
   * DATABASE_MIGRATION_URL: where pending migrations run, when DATABASE_URL goes through a pooler in transaction mode
   * (PgBouncer); unset, they run on DATABASE_URL. They need a direct (or session-mode) connection: kysely's Migrator
   * takes a session-level advisory lock (`pg_advisory_lock`, so two starts never migrate at once) on one connection,
   * then runs the migrations in a transaction, then unlocks; behind a transaction pooler each of those three may land
   * on another server connection, so the unlock can miss and leave the lock held by a pooled session. Only a start
   * that finds a migration pending opens it (one connection, closed after); an up-to-date check is one SELECT on
   * DATABASE_URL.
   */
  databaseMigrationUrl: string | undefined;
  /** Connections each process opens to DATABASE_URL at most (and to each replica): see docs/deployment.md. */
  databasePoolSize: number;
  /**
   * DATABASE_NAMED_STATEMENTS (on by default): statements that come again are sent as named (prepared) statements,
   * parsed and planned once per connection (db/named-statements.ts). Set `off` behind a pooler in transaction mode
   * that cannot keep them (PgBouncer before 1.21, or with max_prepared_statements = 0).
   */
  databaseNamedStatements: boolean;
  /**
   * DATABASE_READ_URL: streaming replicas (one URL, or several comma-separated) that read operations may use
   * (src/platform/read-routing.ts); empty: every read goes to DATABASE_URL. PostgreSQL only.
   */
  databaseReadUrls: string[];
  /** REPLICA_MAX_LAG_MS: a replica further behind the primary than this is not read from (reads go to the primary). */
  replicaMaxLagMs: number;
  /** Data directory of the embedded PostgreSQL (PGlite) when DATABASE_URL is unset. */
  dataDir: string;
  redisUrl: string | undefined;
  logLevel: string;
  /** Requests per minute per shop, by plan. */
  rateLimits: Record<Plan, number>;
  /** Requests per minute per IP for requests that carry no valid credential. */
  anonymousRateLimit: number;
  /** Create the demo shop and print a key on the first start (default: only on the embedded database). */
  seedDemo: boolean;
  /** express 'trust proxy': hops of proxies whose X-Forwarded-For is believed (per-IP rate limit behind a load balancer). */
  trustProxy: number;
  /** Seconds SIGTERM waits for in-flight requests before closing. */
  shutdownGraceSeconds: number;
  /**
   * How long a claim on an idempotency key lasts unless its request renews it (every third of it, while it runs): a
   * crashed server's keys are free within this.
   */
  idempotencyLeaseMs: number;
  /** The longest a running request keeps renewing its key's lease: a request that hangs lets its key go after it. */
  idempotencyLockTimeoutMs: number;
  /** `statement_timeout` of every write transaction; a statement past it is cancelled and answered 503. */
  statementTimeoutMs: number;
  /** Run the background worker (webhook deliveries, mail) inside `npm start` (WEBHOOK_WORKER=off: API only). */
  webhookWorker: boolean;
  /**
   * Deliver webhooks to loopback, private and link-local addresses. On by default only on the embedded database (a
   * newcomer's receiver on localhost); off with DATABASE_URL, where a shop could otherwise make the server call
   * into its own network (SSRF).
   */
  webhookAllowPrivateTargets: boolean;
  /** Key (32 bytes, base64) that encrypts webhook secrets; unset: one generated once and kept in the database. */
  webhookSecretsKey: Buffer | undefined;
  /** Total time a webhook attempt may take before it counts as failed. */
  webhookTimeoutMs: number;
  /**
   * EMAIL_MARKETING_BASE_URLS (`MAILCHIMP=http://…,KLAVIYO=…`): the base URL of a provider's API instead of its own
   * (tests, a proxy, a sandbox). A provider with an override may be called on a private address; without one, the
   * provider's public host is called (Mailchimp: the key's data centre).
   */
  emailMarketingBaseUrls: Partial<Record<EmailMarketingProvider, string>>;
  /**
   * GATEWAY_BASE_URLS (`STRIPE=http://…,PAYPAL=http://…,PAYPAL_SANDBOX=http://…`): a payment provider's API address
   * instead of its own (a local fake, the provider's mock). PAYPAL serves both modes unless PAYPAL_SANDBOX names the
   * test shops' one. BTCPay Server is self-hosted: its address is part of each connection.
   */
  gatewayBaseUrls: Partial<Record<GatewayBaseUrlName, string>>;
  /** SMTP_URL (smtp:, smtps:) mail is sent through; unset: mail is only recorded (outbound_emails, `emails list`). */
  smtpUrl: string | undefined;
  /** The From header of outgoing mail. */
  mailFrom: string;
  /**
   * How long an idle keep-alive connection is kept. Longer than the idle timeout of the load balancer in front
   * (60 s on the common ones), so the balancer always closes first and never sends a request on a connection this
   * server is closing at that moment (which the client would see as a reset).
   */
  httpKeepAliveTimeoutMs: number;
  /** Time allowed to receive a request's headers (408 after it); longer than the keep-alive timeout. */
  httpHeadersTimeoutMs: number;
  /** Time allowed to receive a whole request, body included (408 after it); at least the headers timeout. */
  httpRequestTimeoutMs: number;
  /**
   * DNS servers (`ip` or `ip:port`, IPv6 as `[ip]:port`) that domain verification asks for its TXT records; empty:
   * the system's resolvers (/etc/resolv.conf).
   */
  dnsServers: string[];
  /** Total time one domain-verification look-up may take before it counts as "DNS unavailable". */
  dnsTimeoutMs: number;
  /**
   * Mark the OAuth consent page's cookies `Secure` (OWNER_COOKIE_SECURE). Default: on, except in development, i.e.
   * when PUBLIC_URL is plain http on a loopback host (localhost, 127.0.0.1, [::1]).
   */
  ownerCookieSecure: boolean;
  /**
   * Base of the Telegram Bot API the bot-notification worker calls (`{telegramApiUrl}/bot<token>/sendMessage`);
   * default https://api.telegram.org. Set by the operator (a self-hosted Bot API server, or a stand-in in tests).
   */
  telegramApiUrl: string;
  /**
   * The Prometheus endpoint (`GET /metrics`) on a port of its own, never the API's: METRICS_PORT (unset: no endpoint),
   * METRICS_HOST (default 127.0.0.1) and METRICS_TOKEN (a Bearer token the scraper sends; required unless the host is
   * a loopback address).
   */
  metrics: { port: number; host: string; token: string | undefined } | undefined;
  /** OTEL_EXPORTER_OTLP_ENDPOINT: tracing is on, its spans exported there (OTLP over HTTP); unset: tracing off. */
  otlpEndpoint: string | undefined;
}

export class ConfigError extends Error {}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return n;
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name]?.toLowerCase();
  if (raw === 'on') return true;
  if (raw === 'off') return false;
  return bool(env, name, fallback);
}

function key32(env: NodeJS.ProcessEnv, name: string): Buffer | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const key = Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError(`${name} must be 32 bytes in base64 (openssl rand -base64 32)`);
  return key;
}

/**
 * DATABASE_MIGRATION_URL is the same database as DATABASE_URL by another way: without DATABASE_URL (the embedded
 * database) it would migrate some other database and leave this one as it was.
 */
function migrationUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = url(env, 'DATABASE_MIGRATION_URL', ['postgres:', 'postgresql:']);
  if (raw && !env.DATABASE_URL)
    throw new ConfigError('DATABASE_MIGRATION_URL needs DATABASE_URL: it is a direct way to the same database');
  return raw;
}

function url(env: NodeJS.ProcessEnv, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(parsed.protocol)) throw new ConfigError(`${name} must use ${protocols.join(' or ')}`);
  return raw;
}

function httpTimeouts(
  env: NodeJS.ProcessEnv,
): Pick<Config, 'httpKeepAliveTimeoutMs' | 'httpHeadersTimeoutMs' | 'httpRequestTimeoutMs'> {
  const keepAlive = int(env, 'HTTP_KEEP_ALIVE_TIMEOUT_SECONDS', 65, 1, 3600);
  // Older Node versions started the headers timer when the previous response ended, so a headers timeout shorter
  // than the keep-alive one cut idle connections with a 408. Node 24 times only requests in progress; the rule is
  // kept anyway (it costs nothing and is what load-balancer guides check for).
  const headers = int(env, 'HTTP_HEADERS_TIMEOUT_SECONDS', keepAlive + 1, 1, 3601);
  if (headers <= keepAlive) {
    throw new ConfigError(
      `HTTP_HEADERS_TIMEOUT_SECONDS (${headers}) must be greater than HTTP_KEEP_ALIVE_TIMEOUT_SECONDS (${keepAlive})`,
    );
  }
  const request = int(env, 'HTTP_REQUEST_TIMEOUT_SECONDS', Math.max(120, headers), 1, 86_400);
  if (request < headers) {
    throw new ConfigError(
      `HTTP_REQUEST_TIMEOUT_SECONDS (${request}) must be at least HTTP_HEADERS_TIMEOUT_SECONDS (${headers})`,
    );
  }
  return {
    httpKeepAliveTimeoutMs: keepAlive * 1000,
    httpHeadersTimeoutMs: headers * 1000,
    httpRequestTimeoutMs: request * 1000,
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = int(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST || '0.0.0.0';
  const publicUrl = (url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(/\/$/, '');
  return {
    port,
    host,
    publicUrl,
    checkoutBaseUrl: (url(env, 'CHECKOUT_BASE_URL', ['http:', 'https:']) ?? publicUrl).replace(/\/$/, ''),
    orderTtlMinutes: int(env, 'ORDER_TTL_MINUTES', 60, 1, 60 * 24 * 30),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseMigrationUrl: migrationUrl(env),
    databasePoolSize: int(env, 'DATABASE_POOL_SIZE', 10, 1, 500),
    databaseNamedStatements: onOff(env, 'DATABASE_NAMED_STATEMENTS', true),
    databaseReadUrls: readUrls(env, 'DATABASE_READ_URL'),
    replicaMaxLagMs: int(env, 'REPLICA_MAX_LAG_MS', 5000, 100, 600_000),
    dataDir: resolve(env.DATA_DIR || 'data/pglite'),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    logLevel: env.LOG_LEVEL || 'info',
    rateLimits: {
      free: int(env, 'RATE_LIMIT_FREE', 120, 1, 1_000_000),
      pro: int(env, 'RATE_LIMIT_PRO', 600, 1, 1_000_000),
      business: int(env, 'RATE_LIMIT_BUSINESS', 3000, 1, 1_000_000),
    },
    anonymousRateLimit: int(env, 'RATE_LIMIT_ANONYMOUS', 60, 1, 1_000_000),
    // A first start on an empty production PostgreSQL must not mint a full-access key into its logs.
    seedDemo: bool(env, 'SEED_DEMO', !env.DATABASE_URL),
    trustProxy: int(env, 'TRUST_PROXY', 0, 0, 10),
    shutdownGraceSeconds: int(env, 'SHUTDOWN_GRACE_SECONDS', 10, 0, 600),
    idempotencyLeaseMs: int(env, 'IDEMPOTENCY_LEASE_SECONDS', 5, 1, 300) * 1000,
    idempotencyLockTimeoutMs: int(env, 'IDEMPOTENCY_LOCK_TIMEOUT_SECONDS', 60, 1, 3600) * 1000,
    statementTimeoutMs: int(env, 'STATEMENT_TIMEOUT_MS', 10_000, 1, 600_000),
    webhookWorker: onOff(env, 'WEBHOOK_WORKER', true),
    webhookAllowPrivateTargets: bool(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', !env.DATABASE_URL),
    webhookSecretsKey: key32(env, 'WEBHOOK_SECRETS_KEY'),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_SECONDS', 10, 1, 60) * 1000,
    emailMarketingBaseUrls: providerBaseUrls(env, 'EMAIL_MARKETING_BASE_URLS'),
    gatewayBaseUrls: gatewayBaseUrls(env, 'GATEWAY_BASE_URLS'),
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    mailFrom: env.MAIL_FROM || 'Merchant Developer API <no-reply@localhost>',
    ...httpTimeouts(env),
    dnsServers: dnsServers(env, 'DNS_SERVERS'),
    dnsTimeoutMs: int(env, 'DNS_TIMEOUT_MS', 3000, 100, 10_000),
    ownerCookieSecure: bool(env, 'OWNER_COOKIE_SECURE', !isDevelopmentUrl(publicUrl)),
    telegramApiUrl: telegramApiUrl(env),
    metrics: metricsEndpoint(env),
    otlpEndpoint: url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']),
  };
}

/** DATABASE_READ_URL: comma-separated PostgreSQL URLs of replicas of DATABASE_URL's server. */
function readUrls(env: NodeJS.ProcessEnv, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  // A replica of the embedded database cannot exist: refuse rather than silently read from nowhere.
  if (!env.DATABASE_URL) throw new ConfigError(`${name} needs DATABASE_URL (replicas are of a PostgreSQL server)`);
  return raw.split(',').map((entry) => {
    const found = url({ [name]: entry.trim() }, name, ['postgres:', 'postgresql:']);
    if (!found) throw new ConfigError(`${name} has an empty entry`);
    return found;
  });
}

/** METRICS_PORT / METRICS_HOST / METRICS_TOKEN: where the metrics are served, and who may read them. */
function metricsEndpoint(env: NodeJS.ProcessEnv): Config['metrics'] {
  if (env.METRICS_PORT === undefined || env.METRICS_PORT === '') return undefined;
  const port = int(env, 'METRICS_PORT', 9464, 0, 65535);
  const host = env.METRICS_HOST || '127.0.0.1';
  const token = env.METRICS_TOKEN || undefined;
  if (token !== undefined && token.length < 16) throw new ConfigError('METRICS_TOKEN must be at least 16 characters');
  // Metrics name the operations, error rates and queue sizes of every shop: off the loopback, a token guards them.
  if (token === undefined && !['127.0.0.1', '::1', 'localhost'].includes(host)) {
    throw new ConfigError(`METRICS_TOKEN is required when METRICS_HOST (${host}) is not a loopback address`);
  }
  return { port, host, token };
}

/** `EMAIL_MARKETING_BASE_URLS`: provider=url pairs (src/platform/email-marketing-providers.ts). */
function providerBaseUrls(env: NodeJS.ProcessEnv, name: string): Partial<Record<EmailMarketingProvider, string>> {
  try {
    return parseProviderBaseUrls(env[name]);
  } catch (err) {
    throw new ConfigError(`${name}: ${(err as Error).message}`);
  }
}

function gatewayBaseUrls(env: NodeJS.ProcessEnv, name: string): Partial<Record<GatewayBaseUrlName, string>> {
  try {
    return parseBaseUrls(env[name], gatewayBaseUrlNames);
  } catch (err) {
    throw new ConfigError(`${name}: ${(err as Error).message}`);
  }
}

/** TELEGRAM_API_URL without trailing slashes (the worker appends `/bot<token>/sendMessage`). */
function telegramApiUrl(env: NodeJS.ProcessEnv): string {
  return (url(env, 'TELEGRAM_API_URL', ['http:', 'https:']) ?? 'https://api.telegram.org').replace(/\/+$/, '');
}

/** `DNS_SERVERS`: comma-separated `ip[:port]` (IPv6: `[ip]:port` or a bare address), as node:dns setServers takes. */
function dnsServers(env: NodeJS.ProcessEnv, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').map((entry) => {
    const text = entry.trim();
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
    const v4 = /^([0-9.]+)(?::(\d+))?$/.exec(text);
    const [host, port] = bracketed ? [bracketed[1]!, bracketed[2]] : v4 ? [v4[1]!, v4[2]] : [text, undefined];
    const family = isIP(host);
    const portOk = port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
    if (family === 0 || !portOk)
      throw new ConfigError(`${name} must be comma-separated ip[:port] addresses (IPv6 as [ip]:port), got "${text}"`);
    if (port === undefined) return host;
    return family === 6 ? `[${host}]:${port}` : `${host}:${port}`;
  });
}

/** Plain http on a loopback host: a developer's machine, where a `Secure` cookie could not be set. */
function isDevelopmentUrl(publicUrl: string): boolean {
  const { protocol, hostname } = new URL(publicUrl);
  return protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(hostname);
}

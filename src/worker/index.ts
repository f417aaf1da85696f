// The background worker of a deployment: its jobs, built from the configuration. `npm start` runs one inside the
// API process (unless WEBHOOK_WORKER=off); `npm run worker` runs one alone (src/worker/main.ts).
import type { Kysely } from 'kysely';
import type { Database } from '../../db/tables';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Clock } from '../platform/clock';
import { mailJob } from './mail';
import { createGateways } from '../integrations/gateway-accounts';
import { gatewayProviders } from '../integrations';
import type { GatewayProvider } from '../integrations/gateway-provider';
import { gatewayEventJob } from './gateway-events';
import { paymentReconcilerJob } from './payment-reconciler';
import { loadSecretBox } from '../platform/secret-box';
import { analyticsReportJob } from './analytics-reports';
import { botNotificationJob } from './bot-notifications';
import { dynamicDeliveryJob } from './dynamic-delivery';
import { emailMarketingSyncJob } from './email-marketing-sync';
import { orderExpiryJob } from './order-expiry';
import { subscriptionRenewalJob } from './subscription-renewals';
import { webhookDeliveryJob } from './webhook-delivery';
import { Worker, type Job } from './worker';

export async function workerJobs(
  db: Kysely<Database>,
  config: Config,
  logger: Logger,
  clock: Clock,
  /** The payment providers (default: Stripe, PayPal, BTCPay Server). */
  providers?: readonly GatewayProvider[],
): Promise<Job[]> {
  const secrets = await loadSecretBox(db, config.webhookSecretsKey);
  const gateways = createGateways(providers ?? gatewayProviders, config.gatewayBaseUrls, secrets);
  return [
    webhookDeliveryJob(db, {
      clock,
      logger,
      secrets,
      allowPrivateTargets: config.webhookAllowPrivateTargets,
      timeoutMs: config.webhookTimeoutMs,
    }),
    mailJob(db, { clock, logger, smtpUrl: config.smtpUrl, from: config.mailFrom }),
    orderExpiryJob(db, { clock, logger, checkoutBaseUrl: config.checkoutBaseUrl }),
    subscriptionRenewalJob(db, { clock, logger, checkoutBaseUrl: config.checkoutBaseUrl }),
    analyticsReportJob(db, { clock, logger }),
    dynamicDeliveryJob(db, {
      clock,
      logger,
      secrets,
      allowPrivateTargets: config.webhookAllowPrivateTargets,
      timeoutMs: config.webhookTimeoutMs,
    }),
    botNotificationJob(db, { clock, logger, secrets, apiUrl: config.telegramApiUrl }),
    gatewayEventJob(db, { clock, logger, gateways, checkoutBaseUrl: config.checkoutBaseUrl }),
    paymentReconcilerJob(db, { clock, logger, gateways, checkoutBaseUrl: config.checkoutBaseUrl }),
    emailMarketingSyncJob(db, {
      clock,
      logger,
      secrets,
      baseUrls: config.emailMarketingBaseUrls,
      allowPrivateTargets: config.webhookAllowPrivateTargets,
      timeoutMs: config.webhookTimeoutMs,
    }),
  ];
}

/** The worker of a process: its entry point (`npm start`, `npm run worker`) gives it the clock its jobs read. */
export async function createWorker(
  db: Kysely<Database>,
  config: Config,
  logger: Logger,
  clock: Clock,
  providers?: readonly GatewayProvider[],
): Promise<Worker> {
  return new Worker(await workerJobs(db, config, logger, clock, providers), { logger, shopClocks: { db, clock } });
}

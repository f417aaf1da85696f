// The email-marketing providers' "add this contact to a list" calls, one adapter per provider, each the provider's
// documented request:
// - MAILCHIMP (Marketing API 3.0): PUT {base}/3.0/lists/{list_id}/members/{md5(lowercase email)}, basic auth
//   `anystring:KEY`, body { email_address, status_if_new } with status_if_new `pending` (Mailchimp mails the
//   confirmation) under double opt-in, else `subscribed`. An existing member is left as it is (status_if_new only
//   applies to a new one). The host is the key's data centre: a key `…-us6` calls https://us6.api.mailchimp.com.
// - KLAVIYO: POST {base}/api/profile-subscription-bulk-create-jobs (JSON:API, `Authorization: Klaviyo-API-Key KEY`,
//   `revision` header), one profile with email marketing consent SUBSCRIBED, related to the list. Whether Klaviyo
//   asks for confirmation is the list's own opt-in setting at Klaviyo (single or double opt-in), not the request's.
// - SENDGRID (Marketing Campaigns): PUT {base}/v3/marketing/contacts { list_ids: [list], contacts: [{ email }] },
//   `Authorization: Bearer KEY`. Its API has no double opt-in, so a setting with double_opt_in is not synced.
// - BREVO: POST {base}/v3/contacts { email, listIds: [list], updateEnabled: true }, header `api-key: KEY`; the list
//   id is Brevo's numeric id. Brevo's double opt-in call needs a confirmation template and a redirect page this
//   setting does not have, so a setting with double_opt_in is not synced.
// Base URLs are the providers' own unless EMAIL_MARKETING_BASE_URLS overrides them (src/config.ts).
import { createHash } from 'node:crypto';
import { parseBaseUrls } from './base-urls';
import type { EmailMarketingProvider } from '../../db/tables';

export const defaultProviderBaseUrls: Readonly<Record<EmailMarketingProvider, string>> = {
  MAILCHIMP: 'https://{dc}.api.mailchimp.com',
  KLAVIYO: 'https://a.klaviyo.com',
  SENDGRID: 'https://api.sendgrid.com',
  BREVO: 'https://api.brevo.com',
};

/** The Klaviyo API revision the request is written against. */
export const KLAVIYO_REVISION = '2024-10-15';

/** What a setting says, for the question whether it can sync at all. */
export interface SyncableSetting {
  provider: EmailMarketingProvider;
  enabled: boolean;
  sync_customers: boolean;
  list_id: string | null;
  double_opt_in: boolean;
  hasKey: boolean;
}

/**
 * Why the setting cannot add a customer to a list (null: it can). Checked when a customer is queued (a setting that
 * cannot sync gets no row) and again when the row is sent (a setting changed meanwhile cancels it).
 */
export function syncBlocker(s: SyncableSetting): string | null {
  if (!s.enabled) return 'the setting is disabled';
  if (!s.sync_customers) return 'sync_customers is off';
  if (!s.hasKey) return 'the setting has no API key';
  if (s.list_id === null) return 'the setting has no list';
  if (s.provider === 'SENDGRID' && s.double_opt_in) return "SendGrid's API has no double opt-in";
  if (s.provider === 'BREVO' && s.double_opt_in) return 'Brevo double opt-in needs a template this setting lacks';
  if (s.provider === 'BREVO' && !/^[1-9][0-9]{0,9}$/.test(s.list_id)) return 'a Brevo list id is a positive integer';
  return null;
}

export interface ContactToAdd {
  provider: EmailMarketingProvider;
  apiKey: string;
  listId: string;
  email: string;
  doubleOptIn: boolean;
}

export interface ProviderRequest {
  method: 'POST' | 'PUT';
  url: string;
  headers: Record<string, string>;
  body: string;
}

export class ProviderRequestError extends Error {}

function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

/** The Mailchimp data centre of a key (`…-us6` -> `us6`). */
export function mailchimpDataCenter(apiKey: string): string | undefined {
  const dc = /-([a-z]{2,10}[0-9]{1,4})$/.exec(apiKey)?.[1];
  return dc;
}

/** md5 of the lowercase email: Mailchimp's subscriber hash. */
export function subscriberHash(email: string): string {
  return createHash('md5').update(email.toLowerCase()).digest('hex');
}

/**
 * The provider's request adding `c.email` to `c.listId`. `baseUrls` overrides the default base URL per provider (an
 * override of MAILCHIMP replaces the whole data-centre host). Throws ProviderRequestError for a key the provider
 * cannot be called with (a Mailchimp key without its data centre).
 */
export function providerRequest(
  c: ContactToAdd,
  baseUrls: Partial<Record<EmailMarketingProvider, string>> = {},
): ProviderRequest {
  const json = { 'content-type': 'application/json', accept: 'application/json' };
  switch (c.provider) {
    case 'MAILCHIMP': {
      let base = baseUrls.MAILCHIMP;
      if (base === undefined) {
        const dc = mailchimpDataCenter(c.apiKey);
        if (!dc) throw new ProviderRequestError('the Mailchimp key has no data-centre suffix (…-us6)');
        base = defaultProviderBaseUrls.MAILCHIMP.replace('{dc}', dc);
      }
      return {
        method: 'PUT',
        url: joinUrl(base, `/3.0/lists/${encodeURIComponent(c.listId)}/members/${subscriberHash(c.email)}`),
        headers: { ...json, authorization: `Basic ${Buffer.from(`anystring:${c.apiKey}`).toString('base64')}` },
        body: JSON.stringify({ email_address: c.email, status_if_new: c.doubleOptIn ? 'pending' : 'subscribed' }),
      };
    }
    case 'KLAVIYO':
      return {
        method: 'POST',
        url: joinUrl(baseUrls.KLAVIYO ?? defaultProviderBaseUrls.KLAVIYO, '/api/profile-subscription-bulk-create-jobs'),
        headers: {
          'content-type': 'application/vnd.api+json',
          accept: 'application/vnd.api+json',
          authorization: `Klaviyo-API-Key ${c.apiKey}`,
          revision: KLAVIYO_REVISION,
        },
        body: JSON.stringify({
          data: {
            type: 'profile-subscription-bulk-create-job',
            attributes: {
              profiles: {
                data: [
                  {
                    type: 'profile',
                    attributes: { email: c.email, subscriptions: { email: { marketing: { consent: 'SUBSCRIBED' } } } },
                  },
                ],
              },
              historical_import: false,
            },
            relationships: { list: { data: { type: 'list', id: c.listId } } },
          },
        }),
      };
    case 'SENDGRID':
      return {
        method: 'PUT',
        url: joinUrl(baseUrls.SENDGRID ?? defaultProviderBaseUrls.SENDGRID, '/v3/marketing/contacts'),
        headers: { ...json, authorization: `Bearer ${c.apiKey}` },
        body: JSON.stringify({ list_ids: [c.listId], contacts: [{ email: c.email }] }),
      };
    case 'BREVO':
      return {
        method: 'POST',
        url: joinUrl(baseUrls.BREVO ?? defaultProviderBaseUrls.BREVO, '/v3/contacts'),
        headers: { ...json, 'api-key': c.apiKey },
        body: JSON.stringify({ email: c.email, listIds: [Number(c.listId)], updateEnabled: true }),
      };
  }
}

/** `MAILCHIMP=http://…,BREVO=https://…` -> base URLs by provider (EMAIL_MARKETING_BASE_URLS). Throws on a bad pair. */
export function parseProviderBaseUrls(text: string | undefined): Partial<Record<EmailMarketingProvider, string>> {
  return parseBaseUrls(text, Object.keys(defaultProviderBaseUrls) as EmailMarketingProvider[]);
}

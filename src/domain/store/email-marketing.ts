// The shop's email-marketing integrations: one setting per provider (MAILCHIMP, KLAVIYO, SENDGRID, BREVO). The API
// lists them (GET /email-marketing/settings, a cursor list, newest first); the operator writes them (`cli
// email-marketing set`) and so do fixtures (src/ops/fixtures/marketing.ts), both through setEmailMarketing below.
import * as settings from '../../../db/queries/email-marketing';
import type { EmailMarketingProvider, EmailMarketingSettingRow } from '../../../db/tables';
import { ValidationError, type ErrorDetail } from '../../errors';
import { newId } from '../../ids';
import type { CursorList } from '../../platform/cursor-list';
import type { ListSpec } from '../../platform/list-query';
import type { ShopWrite } from '../../platform/unit-of-work';
import { emailMarketingSettingView } from '../../views/email-marketing-setting';

export const emailMarketingProviders: readonly EmailMarketingProvider[] = ['MAILCHIMP', 'KLAVIYO', 'SENDGRID', 'BREVO'];
export const LIST_ID_MAX = 200;

/** `GET /email-marketing/settings`: newest first; no filters or sorts. */
export const emailMarketingList: ListSpec = {
  name: 'email_marketing_settings',
  filters: {},
  sorts: { created_at: { column: 'created_at', cast: 'timestamptz' } },
  defaultSort: '-created_at',
};

export const emailMarketingCursorList: CursorList<
  settings.EmailMarketingSettingPageRow,
  ReturnType<typeof emailMarketingSettingView>
> = {
  spec: emailMarketingList,
  page: settings.emailMarketingSettingsPage,
  view: (rows) => rows.map(emailMarketingSettingView),
};

/** What a provider's setting becomes (fields left out take their defaults). */
export interface EmailMarketingInput {
  provider: string;
  enabled?: boolean;
  list_id?: string | null;
  double_opt_in?: boolean;
  sync_customers?: boolean;
  last_synced_at?: Date | null;
}

/** Problems of an input, by field (empty when it is valid). */
export function emailMarketingProblems(input: EmailMarketingInput): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (!(emailMarketingProviders as readonly string[]).includes(input.provider))
    problems.push({ field: 'provider', message: `must be one of ${emailMarketingProviders.join(', ')}` });
  const list = input.list_id;
  if (list != null && (list.length < 1 || list.length > LIST_ID_MAX || !/^[\x21-\x7e]+$/.test(list)))
    problems.push({ field: 'list_id', message: `must be 1 to ${LIST_ID_MAX} visible ASCII characters` });
  return problems;
}

/**
 * Sets the shop's setting of a provider to exactly `input` (a field left out takes its default: enabled, no list,
 * no double opt-in, customers synced, never synced). The shop's existing setting of that provider keeps its id and
 * created_at, and its last_synced_at unless one is given. Invalid input: 422, nothing written.
 */
export async function setEmailMarketing(w: ShopWrite, input: EmailMarketingInput): Promise<EmailMarketingSettingRow> {
  const { trx, shopId, now } = w;
  const problems = emailMarketingProblems(input);
  if (problems.length > 0) throw new ValidationError(problems);
  const fields = {
    enabled: input.enabled ?? true,
    list_id: input.list_id ?? null,
    double_opt_in: input.double_opt_in ?? false,
    sync_customers: input.sync_customers ?? true,
  };
  return settings.upsertEmailMarketingSetting(
    trx,
    shopId,
    {
      id: newId('ems'),
      provider: input.provider as EmailMarketingProvider,
      ...fields,
      last_synced_at: input.last_synced_at ?? null,
      created_at: now,
      updated_at: now,
    },
    input.last_synced_at === undefined ? fields : { ...fields, last_synced_at: input.last_synced_at },
    now,
  );
}

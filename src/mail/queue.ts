// Mail, queued in the transaction of the change that sends it: an outbound_emails row, rendered there, so a template
// error refuses the write instead of losing the message later. The worker's mail job (src/worker/mail.ts) sends it
// after commit. Here, in the mail layer, because queueing renders the templates (src/mail/templates.ts).
import type { Transaction } from 'kysely';
import { emailsInsert, insertEmails, type NewEmail } from '../../db/queries/outbound-emails';
import type { Database } from '../../db/tables';
import { newId } from '../ids';
import type { Clock } from '../platform/clock';
import { currentTraceparent } from '../platform/tracing';
import type { EffectSink, MailDraft } from '../platform/unit-of-work';
import { inMode, renderMail } from './templates';

/**
 * The row of `message`, due at `now`, rendered for both modes: the statement that queues it keeps the one of the
 * shop's mode (a test shop's message is marked as test mode, `inMode`), so no writer reads the shop first.
 */
function queuedEmail(message: MailDraft, now: Date): NewEmail {
  const rendered = renderMail(message.template, message.data);
  // The request queueing it (tracing on only: the statement is unchanged when off), for the mail span's link.
  const traceparent = currentTraceparent();
  const row: NewEmail = {
    id: newId('eml'),
    to_address: message.to,
    template: message.template,
    rendered: { live: inMode(rendered, true), test: inMode(rendered, false) },
    status: 'QUEUED',
    next_attempt_at: now,
    created_at: now,
  };
  return traceparent ? { ...row, traceparent } : row;
}

/**
 * Renders `message` and queues it for the shop inside `trx` (it commits, or rolls back, with the change that sent
 * it); due at `now`. Returns the new row's id (`eml_…`).
 */
export async function queueMail(
  trx: Transaction<Database>,
  shopId: string,
  message: MailDraft,
  now: Date,
): Promise<string> {
  const row = queuedEmail(message, now);
  await insertEmails(trx, shopId, [row]);
  return row.id;
}

/** The effect sink of `Effects.mail`: queues the pending messages for the writing shop, in the flush's statement. */
export function mailSink(clock: Clock): EffectSink {
  return {
    kinds: ['mail'],
    write(trx, effects, origin, batch) {
      if (effects.mail.length === 0) return;
      const shopId = origin.shopId;
      if (!shopId) throw new Error(`${origin.operationId} queued mail without a shop; mail is always a shop's`);
      const now = (origin.clock ?? clock).now();
      const rows = effects.mail.map((message) => queuedEmail(message, now));
      batch.add({ steps: [{ name: 'new_emails', query: emailsInsert(shopId, rows) }] });
    },
  };
}

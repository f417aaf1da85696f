// Mail, queued in the transaction of the change that sends it: an outbound_emails row, rendered there, so a template
// error refuses the write instead of losing the message later. The worker's mail job (src/worker/mail.ts) sends it
// after commit. Here, in the mail layer, because queueing renders the templates (src/mail/templates.ts).
import type { Transaction } from 'kysely';
import { insertEmail } from '../../db/queries/outbound-emails';
import { shopById } from '../../db/queries/shops';
import type { Database } from '../../db/tables';
import { newId } from '../ids';
import type { Clock } from '../platform/clock';
import type { EffectSink, MailDraft } from '../platform/unit-of-work';
import { inMode, renderMail } from './templates';

/**
 * Renders `message` and queues it for the shop inside `trx` (it commits, or rolls back, with the change that sent
 * it); due at `now`. A test shop's message is marked as test mode (`inMode`). Returns the new row's id (`eml_…`).
 */
export async function queueMail(
  trx: Transaction<Database>,
  shopId: string,
  message: MailDraft,
  now: Date,
): Promise<string> {
  const shop = await shopById(trx, shopId);
  if (!shop) throw new Error(`mail queued for shop ${shopId}, which does not exist`);
  const rendered = inMode(renderMail(message.template, message.data), shop.livemode);
  const id = newId('eml');
  await insertEmail(trx, shopId, {
    id,
    to_address: message.to,
    template: message.template,
    subject: rendered.subject,
    html: rendered.html,
    text: rendered.text,
    status: 'QUEUED',
    next_attempt_at: now,
    created_at: now,
  });
  return id;
}

/** The effect sink of `Effects.mail`: queues each pending message for the writing shop. */
export function mailSink(clock: Clock): EffectSink {
  return {
    kinds: ['mail'],
    async write(trx, effects, origin) {
      if (effects.mail.length === 0) return;
      const shopId = origin.shopId;
      if (!shopId) throw new Error(`${origin.operationId} queued mail without a shop; mail is always a shop's`);
      const now = (origin.clock ?? clock).now();
      for (const message of effects.mail) await queueMail(trx, shopId, message, now);
    },
  };
}

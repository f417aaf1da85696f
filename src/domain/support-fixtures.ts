// The disputes, reviews and tickets part of the fixture format (src/domain/fixtures.ts, docs/fixtures.md). They are
// written through the same functions as the command line and the SANDBOX gateway's page (src/domain/disputes.ts,
// reviews.ts, tickets.ts), so the same rules hold: reviews only for real COMPLETED orders of the shop, tickets only
// for real customers (of this file or already of the shop), disputes only by the gateway that took the order's
// payment. Their events (`review:created`, `ticket:created`, `dispute:opened`, `dispute:closed`, and a lost
// dispute's `order:refunded`) go to the outbox in the seed's transaction. Written in that order: reviews, tickets,
// disputes (a review needs its order still COMPLETED). Any refusal rolls the whole seed back.
import type { Transaction } from 'kysely';
import type { Database } from '../../db/tables';
import { ApiError } from '../errors';
import { newId } from '../ids';
import type { Clock } from '../platform/clock';
import { eventsSink } from '../platform/events';
import { Effects } from '../platform/unit-of-work';
import { closeOrderDispute, disputeOutcomes, disputeReasons, openDispute } from './disputes';
import { sandboxGatewayCode } from './gateways';
import { createReview, reviewFieldProblems, REVIEW_TEXT_MAX } from './reviews';
import {
  createTicket,
  ticketFieldProblems,
  ticketPriorities,
  ticketStatuses,
  TICKET_MESSAGE_MAX,
  TICKET_SUBJECT_MAX,
} from './tickets';

const id = { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' };

/** Properties of the fixture schema. */
export const supportFixtureSchema = {
  // Reviews of COMPLETED orders already in the shop (created by `cli order create` / `order complete` or the API).
  reviews: {
    type: 'array',
    maxItems: 10000,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['order_id', 'rating'],
      properties: {
        order_id: id,
        // Required when the order has several products.
        product_id: id,
        rating: { type: 'integer', minimum: 1, maximum: 5 },
        message: { type: 'string', minLength: 1, maxLength: REVIEW_TEXT_MAX },
        // The merchant's reply (replied_at: the time of the seed).
        reply: { type: 'string', minLength: 1, maxLength: REVIEW_TEXT_MAX },
      },
    },
  },
  // Tickets of customers of this file or of the shop.
  tickets: {
    type: 'array',
    maxItems: 10000,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['email', 'subject', 'message'],
      properties: {
        email: { type: 'string', format: 'email', maxLength: 254 },
        subject: { type: 'string', minLength: 1, maxLength: TICKET_SUBJECT_MAX },
        message: { type: 'string', minLength: 1, maxLength: TICKET_MESSAGE_MAX },
        // An order of that customer.
        order_id: id,
        priority: { enum: ticketPriorities },
        status: { enum: ticketStatuses },
      },
    },
  },
  // Disputes of orders already in the shop, opened by the gateway that took the payment.
  disputes: {
    type: 'array',
    maxItems: 10000,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['order_id'],
      properties: {
        order_id: id,
        // Default SANDBOX; must be the order's gateway.
        gateway: { type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,63}$' },
        reason: { enum: disputeReasons },
        // OPEN (default), or decided at once: WON, LOST, CLOSED.
        status: { enum: ['OPEN', ...disputeOutcomes] },
      },
    },
  },
} as const;

export interface ReviewFixture {
  order_id: string;
  product_id?: string;
  rating: number;
  message?: string;
  reply?: string;
}

export interface TicketFixture {
  email: string;
  subject: string;
  message: string;
  order_id?: string;
  priority?: 'LOW' | 'NORMAL' | 'HIGH';
  status?: 'OPEN' | 'PENDING' | 'CLOSED';
}

export interface DisputeFixture {
  order_id: string;
  gateway?: string;
  reason?: (typeof disputeReasons)[number];
  status?: 'OPEN' | (typeof disputeOutcomes)[number];
}

export interface SupportFixtures {
  reviews?: ReviewFixture[];
  tickets?: TicketFixture[];
  disputes?: DisputeFixture[];
}

/** Rules across fields and items that the JSON Schema does not say. */
export function supportFixtureProblems(f: SupportFixtures): string[] {
  const problems: string[] = [];
  (f.reviews ?? []).forEach((r, i) => {
    for (const p of reviewFieldProblems(r)) problems.push(`/reviews/${i}/${p.field} ${p.message}`);
  });
  (f.tickets ?? []).forEach((t, i) => {
    for (const p of ticketFieldProblems(t)) problems.push(`/tickets/${i}/${p.field} ${p.message}`);
  });
  const disputed = new Map<string, number>();
  (f.disputes ?? []).forEach((d, i) => {
    const j = disputed.get(d.order_id);
    // A decided dispute may be followed by another of the same order; an open one may not.
    if (j !== undefined && ((f.disputes ?? [])[j]?.status ?? 'OPEN') === 'OPEN')
      problems.push(`/disputes/${i}/order_id already has an open dispute in /disputes/${j}`);
    disputed.set(d.order_id, i);
  });
  return problems;
}

/** A refusal of the domain as a fixture problem at its path. */
function problem(err: unknown, path: string, fail: (message: string) => Error): unknown {
  if (!(err instanceof ApiError)) return err;
  const details = (err.details ?? []).map((d) => ` ${d.field} ${d.message}`).join(';');
  return fail(`${path}${details || ` ${err.message}`}`);
}

/** Writes the reviews, tickets and disputes of a fixture file (in the caller's transaction); returns their ids. */
export async function seedSupportFixtures(
  trx: Transaction<Database>,
  shopId: string,
  f: SupportFixtures,
  clock: Clock,
  fail: (message: string) => Error,
): Promise<{ reviews: string[]; tickets: string[]; disputes: string[] }> {
  const created = { reviews: [] as string[], tickets: [] as string[], disputes: [] as string[] };
  const effects = new Effects();
  const step = async <T>(path: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (err) {
      throw problem(err, path, fail);
    }
  };
  for (const [i, r] of (f.reviews ?? []).entries()) {
    const review = await step(`/reviews/${i}`, () =>
      createReview(
        trx,
        shopId,
        { order_id: r.order_id, product_id: r.product_id, rating: r.rating, message: r.message, reply: r.reply },
        effects,
        clock,
      ),
    );
    created.reviews.push(review.id);
  }
  for (const [i, t] of (f.tickets ?? []).entries()) {
    const ticket = await step(`/tickets/${i}`, () => createTicket(trx, shopId, t, effects, clock));
    created.tickets.push(ticket.id);
  }
  for (const [i, d] of (f.disputes ?? []).entries()) {
    const gateway = d.gateway ?? sandboxGatewayCode;
    const dispute = await step(`/disputes/${i}`, () =>
      openDispute(trx, shopId, d.order_id, { gateway, reason: d.reason }, effects, clock),
    );
    if (d.status !== undefined && d.status !== 'OPEN') {
      const outcome = d.status;
      await step(`/disputes/${i}`, () =>
        closeOrderDispute(trx, shopId, d.order_id, { gateway, outcome, disputeId: dispute.id }, effects, clock),
      );
    }
    created.disputes.push(dispute.id);
  }
  // The events, in the seed's transaction: delivered to the shop's webhooks like any other.
  await eventsSink(clock).write(trx, effects.pending, {
    shopId,
    credentialId: undefined,
    operationId: 'cli:seed',
    requestId: newId('req'),
  });
  return created;
}

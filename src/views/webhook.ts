// Webhook endpoints, their delivery log and events -> the contract's WebhookEndpoint, WebhookDeliveryLog and Event.
// Secrets never pass through here: the one response that shows a secret adds it itself.
import type { EventRow, WebhookAttemptRow, WebhookEndpointRow } from '../../db/tables';

const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

/** Parses stored JSON keeping every number as its source text, so sending it again changes no digit. */
function parseExact(text: string): Record<string, unknown> {
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined ? rawJson(context.source) : value,
  ) as Record<string, unknown>;
}

export function webhookEndpointView(row: WebhookEndpointRow) {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    description: row.description,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The contract shows the first 1 KiB of an answer; the log keeps more for support. */
const RESPONSE_BODY_SHOWN = 1024;

export function webhookAttemptView(row: WebhookAttemptRow) {
  return {
    id: row.id,
    webhook_id: row.endpoint_id,
    event_id: row.event_id,
    event: row.event_type,
    url: row.url,
    status: row.status,
    attempt: row.attempt,
    response_status: row.response_status,
    response_body: row.response_body === null ? null : row.response_body.slice(0, RESPONSE_BODY_SHOWN),
    duration_ms: row.duration_ms,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error ?? '' },
    next_retry_at: row.next_retry_at ? row.next_retry_at.toISOString() : null,
    created_at: row.created_at.toISOString(),
  };
}

export function eventView(row: EventRow) {
  return {
    id: row.id,
    type: row.type,
    // As stored: amounts keep every digit.
    data: parseExact(row.data),
    livemode: row.livemode,
    created_at: row.created_at.toISOString(),
  };
}

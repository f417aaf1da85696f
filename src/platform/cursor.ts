// Opaque, signed keyset cursors. A cursor carries the last row's sort values and id, a hash of the filters and
// sorts it was issued under, and its issue time; HMAC-SHA256 under a server secret makes it tamper-evident.
// Any problem (tampered, expired, issued for other filters/sorts) is a 422 with a detail on `cursor`.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { ValidationError } from '../errors';

export const cursorLifetimeMs = 24 * 60 * 60 * 1000;

export interface CursorPosition {
  /** The last row's sort values, as exact text (timestamps with microseconds). */
  values: string[];
  id: string;
}

interface CursorPayload {
  v: string[];
  i: string;
  q: string;
  t: number;
}

export class CursorCodec {
  constructor(
    private readonly secret: Buffer,
    private readonly now: () => number = Date.now,
  ) {}

  /** A short hash of the normalised query a cursor is bound to (list name, filters, sorts). */
  static queryHash(parts: Record<string, unknown>): string {
    const canonical = JSON.stringify(
      Object.keys(parts)
        .sort()
        .map((k) => [k, parts[k]]),
    );
    return createHash('sha256').update(canonical).digest('base64url').slice(0, 16);
  }

  encode(position: CursorPosition, queryHash: string): string {
    const payload: CursorPayload = { v: position.values, i: position.id, q: queryHash, t: this.now() };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  decode(cursor: string, queryHash: string): CursorPosition {
    const [body, signature, extra] = cursor.split('.');
    if (!body || !signature || extra !== undefined || !this.verify(body, signature))
      throw invalid('is not a valid cursor');
    let payload: CursorPayload;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as CursorPayload;
    } catch {
      throw invalid('is not a valid cursor');
    }
    if (!Array.isArray(payload.v) || typeof payload.i !== 'string' || typeof payload.t !== 'number')
      throw invalid('is not a valid cursor');
    if (this.now() - payload.t > cursorLifetimeMs)
      throw invalid('has expired (cursors are valid for 24 hours); start again from the first page');
    if (payload.q !== queryHash)
      throw invalid('was issued for other filters or sorts; send the same filters and sorts, or start again');
    return { values: payload.v, id: payload.i };
  }

  private sign(body: string): string {
    return createHmac('sha256', this.secret).update(body).digest('base64url');
  }

  private verify(body: string, signature: string): boolean {
    const expected = Buffer.from(this.sign(body));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

function invalid(message: string): ValidationError {
  return new ValidationError([{ field: 'query.cursor', message }], `The cursor ${message}.`);
}

export interface Page<T> {
  data: T[];
  pagination: { next_cursor: string | null; has_more: boolean };
}

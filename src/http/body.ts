// Request bodies: every body is read as raw bytes first, whatever its media type, so the 1 MiB limit holds for
// all of them (multipart included), then turned into one JSON value so a single schema validates them all.
// JSON and text/plain (holding JSON) are parsed; multipart fields become properties (busboy parses them from the
// buffer), and a field's text is parsed as JSON where the schema wants a non-string value there.
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import express, { type RequestHandler } from 'express';
import { ApiError, ClientAbortedError, ValidationError } from '../errors';

export const bodyLimitBytes = 1024 * 1024;

const raw = express.raw({ type: () => true, limit: bodyLimitBytes });

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

const continueDeferred = new WeakSet<IncomingMessage>();

/**
 * `Expect: 100-continue`: the client sends its body only after `100 Continue`, which Node would send at once. The
 * server (src/http/client-error.ts) hands such requests here instead, and the go-ahead is given only when the body
 * is about to be read: a request refused before that (401, 403, 413, ...) is answered without the client ever
 * sending its body (Node closes the connection after such an answer).
 */
export function deferContinue(req: IncomingMessage): void {
  continueDeferred.add(req);
}

/**
 * Reads the raw body (at most 1 MiB) into req.body. A declared Content-Length over the limit is refused before a
 * byte of the body is read: the body parser would otherwise read the whole declared body (to discard it) before
 * answering, so a client announcing gigabytes holds the connection, and waits, until it has sent them all. The
 * connection is closed with the answer, since the unread body cannot be skipped.
 */
export const readBody: RequestHandler = (req, res, next) => {
  if (Number(req.headers['content-length']) > bodyLimitBytes) {
    return next(new ApiError('PAYLOAD_TOO_LARGE', undefined, { headers: { Connection: 'close' } }));
  }
  // The client waits for this before sending its body (see deferContinue).
  if (continueDeferred.delete(req)) res.writeContinue();
  raw(req, res, (err?: unknown) => {
    if (!err) return next();
    const e = err as { type?: string; code?: string };
    if (e.type === 'entity.too.large') return next(new ApiError('PAYLOAD_TOO_LARGE'));
    if (e.type === 'request.aborted' || e.code === 'ECONNABORTED' || e.code === 'ECONNRESET') {
      return next(new ClientAbortedError());
    }
    return next(
      new ValidationError([{ field: 'body', message: 'the body could not be read' }], 'The request body is malformed.'),
    );
  });
};

export interface BodySchema {
  type?: string | string[];
  properties?: Record<string, BodySchema>;
}

function wantsString(schema: BodySchema | undefined): boolean {
  if (!schema?.type) return false;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return types.includes('string') && types.every((t) => t === 'string' || t === 'null');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ValidationError(
      [{ field: 'body', message: `is not valid JSON: ${(err as Error).message}` }],
      'The request body is not valid JSON.',
    );
  }
}

/** The fields of a multipart body, last value wins; a file part is refused (attachments go by id). */
function multipartFields(headers: express.Request['headers'], bytes: Buffer): Promise<Map<string, string>> {
  return new Promise((resolve, reject) => {
    const fields = new Map<string, string>();
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers, limits: { fieldSize: bodyLimitBytes, fields: 1000, files: 0 } });
    } catch {
      reject(
        new ValidationError(
          [{ field: 'body', message: 'is not valid multipart/form-data' }],
          'The request body is malformed.',
        ),
      );
      return;
    }
    const fail = (field: string, message: string) =>
      reject(new ValidationError([{ field, message }], 'The request body is malformed.'));
    parser.on('field', (name, value) => fields.set(name, value));
    parser.on('file', (name, stream) => {
      stream.resume();
      fail(name, 'file uploads are not accepted here');
    });
    parser.on('filesLimit', () => fail('body', 'file uploads are not accepted here'));
    parser.on('fieldsLimit', () => fail('body', 'has more than 1000 fields'));
    parser.on('error', () => fail('body', 'is not valid multipart/form-data'));
    parser.on('close', () => resolve(fields));
    parser.end(bytes);
  });
}

/**
 * An `application/x-www-form-urlencoded` body as an object of strings. A parameter sent twice is refused (RFC 6749
 * §3.2: request parameters must not be included more than once), so the request is never read two ways.
 */
function formFields(bytes: Buffer): Record<string, string> {
  const entries: [string, string][] = [];
  const seen = new Set<string>();
  for (const [name, value] of new URLSearchParams(bytes.toString('utf8'))) {
    if (seen.has(name)) {
      throw new ValidationError([{ field: name, message: 'is sent more than once' }], 'A parameter is repeated.');
    }
    seen.add(name);
    entries.push([name, value]);
  }
  // fromEntries defines own properties, so a field named __proto__ cannot replace the object's prototype.
  return Object.fromEntries(entries);
}

/**
 * The body as a JSON value, or undefined when there is none. `schema` is the operation's body schema (used to
 * decide which multipart fields are JSON text).
 */
export async function bodyValue(
  req: express.Request,
  schema: BodySchema | undefined,
  accepted: readonly string[] = [],
): Promise<unknown> {
  const type = mediaType(req.headers['content-type']);
  const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  // Only the operations whose contract lists it (the OAuth token and revocation endpoints, where standard clients
  // send it): every other operation answers it 415 like any other media type.
  if (type === 'application/x-www-form-urlencoded' && accepted.includes(type)) return formFields(bytes);
  if (type === 'multipart/form-data') {
    const entries: [string, unknown][] = [];
    for (const [name, text] of await multipartFields(req.headers, bytes)) {
      if (wantsString(schema?.properties?.[name])) {
        entries.push([name, text]);
        continue;
      }
      try {
        entries.push([name, JSON.parse(text)]);
      } catch {
        entries.push([name, text]); // not JSON: validation reports it against the schema
      }
    }
    // fromEntries defines own properties, so a field named __proto__ cannot replace the object's prototype.
    return Object.fromEntries(entries);
  }
  if (bytes.length === 0) return undefined;
  if (type === 'application/json' || type === 'text/plain' || /^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    return parseJson(bytes.toString('utf8'));
  }
  throw new ApiError(
    'UNSUPPORTED_MEDIA_TYPE',
    `The media type "${type || '(none)'}" is not accepted; send application/json, multipart/form-data or text/plain.`,
  );
}

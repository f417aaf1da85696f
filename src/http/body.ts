// Request bodies: read raw (limit 1 MiB), then turned into one JSON value whatever the media type, so a single
// schema validates them all. JSON and text/plain (holding JSON) are parsed; multipart fields become properties,
// and a field's text is parsed as JSON where the schema wants a non-string value there.
import express, { type RequestHandler } from 'express';
import multer from 'multer';
import { ApiError, ValidationError } from '../errors';

export const bodyLimitBytes = 1024 * 1024;

const multipart = multer({ limits: { fieldSize: bodyLimitBytes, fields: 1000, files: 0 } }).none();
const raw = express.raw({ type: () => true, limit: bodyLimitBytes });

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Reads the body: multipart through multer (fields only), everything else as raw bytes. */
export const readBody: RequestHandler = (req, res, next) => {
  const reader = mediaType(req.headers['content-type']) === 'multipart/form-data' ? multipart : raw;
  reader(req, res, (err?: unknown) => {
    if (!err) return next();
    const e = err as { type?: string; code?: string; status?: number; field?: string };
    if (e.type === 'entity.too.large' || e.code === 'LIMIT_FIELD_VALUE' || e.code === 'LIMIT_FIELD_COUNT') {
      return next(new ApiError('PAYLOAD_TOO_LARGE'));
    }
    if (e.code === 'LIMIT_FILE_COUNT' || e.code === 'LIMIT_UNEXPECTED_FILE') {
      return next(new ValidationError([{ field: e.field ?? 'body', message: 'file uploads are not accepted here' }]));
    }
    if (e.type === 'request.aborted' || e.code === 'ECONNABORTED') return next(err);
    // Malformed multipart, bad encoding: the body cannot be read.
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

/**
 * The body as a JSON value, or undefined when there is none. `schema` is the operation's body schema (used to
 * decide which multipart fields are JSON text).
 */
export function bodyValue(req: express.Request, schema: BodySchema | undefined): unknown {
  const type = mediaType(req.headers['content-type']);
  if (type === 'multipart/form-data') {
    const fields = (req.body ?? {}) as Record<string, string>;
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(fields)) {
      const text = Array.isArray(value) ? value[value.length - 1] : value;
      if (wantsString(schema?.properties?.[name])) {
        out[name] = text;
        continue;
      }
      try {
        out[name] = JSON.parse(text);
      } catch {
        out[name] = text; // not JSON: validation reports it against the schema
      }
    }
    return out;
  }
  const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  if (bytes.length === 0) return undefined;
  if (type === 'application/json' || type === 'text/plain' || /^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    return parseJson(bytes.toString('utf8'));
  }
  throw new ApiError(
    'UNSUPPORTED_MEDIA_TYPE',
    `The media type "${type || '(none)'}" is not accepted; send application/json, multipart/form-data or text/plain.`,
  );
}

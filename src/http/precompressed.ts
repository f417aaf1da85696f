// Large static bodies (Scalar's 4.35 MB bundle, the 600 kB contract) sent compressed, brotli or gzip as the client
// accepts: uncompressed, the docs took 6.6-11.7 s to render. Each body is compressed once per process, on the first
// request that wants that coding, off the event loop (zlib's thread pool), and kept; later requests send the kept
// bytes, so no request pays for compression twice and nothing is compressed at start. API responses are not
// compressed here: they are small, made per request, and their CPU is the API's budget.
// Every representation has its own strong ETag (a digest of the uncompressed bytes, plus the coding), so a
// conditional request is answered 304 without a body and a cache never serves one coding for another (Vary).
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { NextFunction, Request, Response } from 'express';

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

// Brotli's quality 11 saves another 10 % on the bundle but takes 12 s of CPU; 9 takes half a second.
const compressors = {
  br: (body: Buffer) =>
    brotli(body, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 9,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
        [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    }),
  gzip: (body: Buffer) => gzipped(body, { level: 9 }),
};

export type Coding = keyof typeof compressors | 'identity';

/**
 * The coding to send for an Accept-Encoding header (RFC 9110 §12.5.3): of br and gzip, the one with the highest
 * weight above 0 (`*` stands for those not named; on a tie, br, the smaller), unless the header names identity with
 * a higher weight. No header, or nothing acceptable: identity, which every client can read.
 */
export function preferredCoding(acceptEncoding: string | undefined): Coding {
  if (!acceptEncoding) return 'identity';
  const weights = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    if (!name) continue;
    const q = params.find((p) => /^q\s*=/.test(p));
    const weight = q === undefined ? 1 : Number(q.slice(q.indexOf('=') + 1));
    weights.set(name, Number.isFinite(weight) ? Math.min(1, Math.max(0, weight)) : 0);
  }
  const weightOf = (coding: string) => weights.get(coding) ?? weights.get('*') ?? 0;
  let best: Coding = 'identity';
  let bestWeight = 0;
  for (const coding of ['br', 'gzip'] as const) {
    if (weightOf(coding) > bestWeight) [best, bestWeight] = [coding, weightOf(coding)];
  }
  const identity = weights.get('identity');
  return identity !== undefined && identity > bestWeight ? 'identity' : best;
}

export interface StaticBody {
  /** Sends the body in the coding the request prefers, or 304 when the request's validator matches. */
  send(req: Request, res: Response, next: NextFunction): void;
}

/**
 * A body made once (on first use) by `make`, sent with `type` and `cacheControl` (for example `public,
 * max-age=31536000, immutable` where the address carries a version, `no-cache` where it does not: the browser then
 * revalidates with its ETag and gets a 304).
 */
export function staticBody(options: { type: string; cacheControl: string; make: () => Buffer | string }): StaticBody {
  let identity: { bytes: Buffer; tag: string } | undefined;
  const encoded = new Map<Coding, Promise<Buffer>>();

  const bytesIn = (coding: Coding, plain: Buffer): Promise<Buffer> => {
    if (coding === 'identity') return Promise.resolve(plain);
    let pending = encoded.get(coding);
    if (!pending) {
      pending = compressors[coding](plain);
      // A failure is not kept: the next request tries again.
      pending.catch(() => encoded.delete(coding));
      encoded.set(coding, pending);
    }
    return pending;
  };

  return {
    send(req, res, next) {
      if (!identity) {
        const made = options.make();
        const bytes = typeof made === 'string' ? Buffer.from(made) : made;
        identity = { bytes, tag: createHash('sha256').update(bytes).digest('base64url').slice(0, 27) };
      }
      const { bytes, tag } = identity;
      const coding = preferredCoding(req.headers['accept-encoding']);
      res.vary('Accept-Encoding');
      res.set({
        'Content-Type': options.type,
        'Cache-Control': options.cacheControl,
        ETag: coding === 'identity' ? `"${tag}"` : `"${tag}-${coding}"`,
      });
      if (req.fresh) {
        res.status(304).end();
        return;
      }
      bytesIn(coding, bytes).then((body) => {
        if (coding !== 'identity') res.set('Content-Encoding', coding);
        res.set('Content-Length', String(body.length)).end(body);
      }, next);
    },
  };
}

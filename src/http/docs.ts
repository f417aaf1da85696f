// The published contract and its documentation, served by the API itself with nothing loaded from another host:
// /openapi.yaml, /openapi.json, /docs (Redoc, rendered in the browser from /openapi.json) and /docs/errors.
// Every page is built on its first request, not at start: nothing here is on the way to the first API response.
import { dirname, join } from 'node:path';
import escapeHtml from 'escape-html';
import { Router } from 'express';
import { errorCatalog } from '../errors';
import { specJson, specText } from '../spec';

/** A value computed on first use and kept. */
function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

const redocBundlePath = once(() =>
  join(dirname(require.resolve('redoc/package.json')), 'bundles', 'redoc.standalone.js'),
);

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem 2rem;line-height:1.5}
dt{font-weight:600;margin-top:1.2rem;font-family:ui-monospace,monospace}code{background:#f2f2f2;padding:0 .2rem}</style>
</head><body>${body}</body></html>`;
}

function errorsPage(): string {
  const items = Object.entries(errorCatalog)
    .map(
      ([code, e]) =>
        `<dt id="${escapeHtml(code)}">${escapeHtml(code)} <small>HTTP ${e.status}</small></dt><dd>${escapeHtml(e.doc)}</dd>`,
    )
    .join('\n');
  return page(
    'Errors · Merchant Developer API',
    `<h1>Errors</h1><p>Every error is <code>{ "error": { "code", "message", "doc_url", "details"? } }</code> with an
<code>X-Request-Id</code> header. <a href="/docs">API reference</a></p><dl>${items}</dl>`,
  );
}

export function docsRouter(): Router {
  const router = Router();
  const errors = once(errorsPage);
  const reference = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Merchant Developer API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head><body>
<redoc spec-url="/openapi.json" hide-download-button="false"></redoc><script src="/docs/redoc.standalone.js"></script></body></html>`;

  router.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml').send(specText());
  });
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(specJson());
  });
  router.get('/docs', (_req, res) => {
    res.type('html').send(reference);
  });
  router.get('/docs/redoc.standalone.js', (_req, res) => {
    res.sendFile(redocBundlePath(), { maxAge: '1d' });
  });
  router.get('/docs/errors', (_req, res) => {
    res.type('html').send(errors());
  });
  return router;
}

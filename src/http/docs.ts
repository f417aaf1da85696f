// The published contract and its documentation, served by the API itself with nothing loaded from another host:
// /openapi.yaml, /openapi.json, /docs (Scalar's API reference, rendered in the browser from /openapi.json, with
// "try it" sending requests straight to this server) and /docs/errors; and the site icon.
// Every page is built on its first request, not at start: nothing here is on the way to the first API response.
// The contract and Scalar's bundle are sent compressed, with validators (src/http/precompressed.ts).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import escapeHtml from 'escape-html';
import { Router, type Response } from 'express';
import { errorCatalog } from '../errors';
import { specJson, specText } from '../spec';
import { faviconLink, serveFavicon } from './favicon';
import { inlineMarkdownToHtml } from './inline-markdown';
import { staticBody } from './precompressed';

/** A value computed on first use and kept. */
function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

// The package exports neither its package.json nor its browser bundle: find them from its entry point (dist/index.js).
const scalarDir = once(() => dirname(dirname(require.resolve('@scalar/api-reference'))));
const scalarVersion = once(
  () => (JSON.parse(readFileSync(join(scalarDir(), 'package.json'), 'utf8')) as { version: string }).version,
);
// The version is in the address, so a browser may keep the 4 MB bundle for a year and an upgrade still reaches it.
const scalarBundleUrl = once(() => `/docs/scalar-${scalarVersion()}/standalone.js`);

/**
 * Scalar's options. By default it loads its fonts from fonts.scalar.com, sends "try it" requests through
 * proxy.scalar.com, reports telemetry and offers an AI agent and an MCP link that call Scalar's servers: all off.
 * Without a proxy, "try it" calls this server from the page, same origin, so no CORS is needed either.
 */
export const scalarConfiguration = {
  url: '/openapi.json',
  title: 'Merchant Developer API',
  withDefaultFonts: false,
  proxyUrl: '',
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  externalUrls: { dashboardUrl: '', registryUrl: '', proxyUrl: '', apiBaseUrl: '' },
  showDeveloperTools: 'never',
  hideClientButton: true,
  documentDownloadType: 'both',
  favicon: '/favicon.svg',
  persistAuth: false,
  // One colour scheme, whose text colours pass WCAG AA contrast (Scalar's own greys, method colours and accent are
  // lighter than 4.5:1 on its backgrounds); system fonts, since the default ones come from Scalar's host.
  darkMode: false,
  forceDarkModeState: 'light',
  hideDarkModeToggle: true,
  customCss:
    ':root{--scalar-font:system-ui,sans-serif;--scalar-font-code:ui-monospace,monospace}' +
    '.light-mode.light-mode{--scalar-color-2:#575757;--scalar-color-3:#5e5e5e;--scalar-color-accent:#005a9e;' +
    '--scalar-color-green:#04663f;--scalar-color-red:#b00005;--scalar-color-yellow:#6e5400;--scalar-color-blue:#005c99;' +
    '--scalar-color-orange:#a33800;--scalar-color-purple:#5203d1;--scalar-color-query:#005c60}' +
    // The Authentication panel's header puts its title ("Authentication Required") and the scheme selector
    // ("Selected Auth Type: bearerAuth") on one row, and the title is the part that shrinks: at 1280 px it is cut
    // mid-word and the selector's text runs on from it. The title keeps its width and the selector wraps below it.
    'div:has(>button>h2 [data-testid="auth-indicator"]){flex-wrap:wrap}' +
    'button:has(>h2 [data-testid="auth-indicator"]){flex:1 0 auto!important}' +
    'div:has(>button>h2 [data-testid="auth-indicator"])>div:last-child{padding:0 .5rem .25rem}',
};

// Scalar shows the contact's e-mail and page as icon links whose text is hidden, and each tag's operation list as a
// scrollable box that the keyboard cannot reach (axe: link-name, scrollable-region-focusable). Until it does so
// itself, the page names those links and makes the boxes focusable, once per rendered frame at most.
const accessibilityFixes = `
let queued = false;
const fix = () => {
  queued = false;
  for (const a of document.querySelectorAll('a[href^="mailto:"], a[target="_blank"]')) {
    if (a.innerText.trim() || a.hasAttribute('aria-label')) continue;
    const href = a.getAttribute('href');
    a.setAttribute('aria-label', href.startsWith('mailto:') ? 'Email ' + href.slice(7) : href + ' (opens in a new tab)');
  }
  for (const box of document.querySelectorAll('.endpoints:not([tabindex])')) box.setAttribute('tabindex', '0');
};
new MutationObserver(() => {
  if (!queued) { queued = true; requestAnimationFrame(fix); }
}).observe(document.body, { childList: true, subtree: true });
`;

// Scripts only from this server and no inline script; Scalar injects its styles, so inline styles are allowed; its
// requests ("try it", the spec) go to this server only. The browser itself refuses any other host.
const docsPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function sendPage(res: Response, html: string): void {
  res.set({ 'Content-Security-Policy': docsPolicy, 'X-Content-Type-Options': 'nosniff' }).type('html').send(html);
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>${faviconLink}
<style>body{font-family:system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem 2rem;line-height:1.5;color:#1a1a1a}
dt{font-weight:600;margin-top:1.2rem;font-family:ui-monospace,monospace}dd{margin-left:1.5rem}
code{background:#f0f0f0;padding:0 .2rem;border-radius:3px;font-size:.92em}small{color:#555;font-weight:400}
a{color:#1d4ed8}</style>
</head><body><main>${body}</main></body></html>`;
}

function errorsPage(): string {
  const items = Object.entries(errorCatalog)
    .map(
      ([code, e]) =>
        `<dt id="${escapeHtml(code)}">${escapeHtml(code)} <small>HTTP ${e.status}</small></dt><dd>${inlineMarkdownToHtml(e.doc)}</dd>`,
    )
    .join('\n');
  return page(
    'Errors · Merchant Developer API',
    `<h1>Errors</h1><p>Every error is <code>{ "error": { "code", "message", "doc_url", "details"? } }</code> with an
<code>X-Request-Id</code> header. <a href="/docs">API reference</a></p><dl>${items}</dl>`,
  );
}

function referencePage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Merchant Developer API reference</title>${faviconLink}</head><body>
<noscript><p>The reference needs JavaScript. Without it, read the contract itself (<a href="/openapi.yaml">openapi.yaml</a>,
<a href="/openapi.json">openapi.json</a>) and the <a href="/docs/errors">error codes</a>.</p></noscript>
<div id="reference"></div>
<script src="${scalarBundleUrl()}"></script><script src="/docs/reference.js"></script></body></html>`;
}

export function docsRouter(): Router {
  const router = Router();
  const errors = once(errorsPage);
  const reference = once(referencePage);
  // Not versioned addresses: the browser revalidates them (no-cache) and gets a 304 while the contract is unchanged.
  const yaml = staticBody({ type: 'application/yaml; charset=utf-8', cacheControl: 'no-cache', make: specText });
  const json = staticBody({ type: 'application/json; charset=utf-8', cacheControl: 'no-cache', make: specJson });
  const bundle = staticBody({
    type: 'text/javascript; charset=utf-8',
    cacheControl: 'public, max-age=31536000, immutable',
    make: () => readFileSync(join(scalarDir(), 'dist', 'browser', 'standalone.js')),
  });
  const start = `Scalar.createApiReference('#reference', ${JSON.stringify(scalarConfiguration)});\n${accessibilityFixes}`;

  router.get('/openapi.yaml', yaml.send);
  router.get('/openapi.json', json.send);
  router.get('/docs', (_req, res) => {
    sendPage(res, reference());
  });
  router.get('/docs/reference.js', (_req, res) => {
    res.set('Cache-Control', 'no-cache').type('text/javascript').send(start);
  });
  router.get('/docs/scalar-:version/standalone.js', (req, res, next) => {
    if (req.params.version !== scalarVersion()) return next();
    bundle.send(req, res, next);
  });
  router.get('/docs/errors', (_req, res) => {
    sendPage(res, errors());
  });
  serveFavicon(router);
  return router;
}

// A theme revision rendered as a storefront page, on the server: one HTML document with its style inline, no
// script, nothing loaded from elsewhere (no fonts, images or stylesheets by URL). Every value from the document,
// the settings and the catalog goes through escapeHtml; links are kept only if they are storefront paths or https
// addresses (the document schema already allows nothing else), and open nothing inside the preview.
import escapeHtml from 'escape-html';
import type { ThemeBase } from '../../../db/tables';
import { effectiveSettings } from '../../domain/themes/bases';
import { testModeBanner } from '../../views/test-mode';

const e = (value: unknown): string => escapeHtml(String(value ?? ''));

export interface StorefrontProduct {
  title: string;
  price_display: string;
  currency: string;
}

export interface RenderInput {
  shopName: string;
  /** The shop's mode: a test shop's preview carries the TEST MODE banner above the preview bar. */
  livemode: boolean;
  themeName: string;
  base: ThemeBase;
  revision: number;
  settings: Record<string, unknown>;
  document: Record<string, unknown>;
  products: StorefrontProduct[];
  /** Shown in the preview bar. */
  expiresAt: Date;
}

const fonts: Record<string, string> = {
  system: 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
  serif: 'Georgia, "Times New Roman", serif',
  'sans-serif': 'Helvetica, Arial, sans-serif',
  monospace: '"DejaVu Sans Mono", Menlo, Consolas, monospace',
};
const widths: Record<string, string> = { narrow: '640px', normal: '960px', wide: '1280px' };
const colorShape = /^#[0-9a-fA-F]{6}$/;

/** A colour setting, or the fallback when the stored value is not a #rrggbb colour (nothing else reaches the CSS). */
const colorOf = (value: unknown, fallback: string) =>
  typeof value === 'string' && colorShape.test(value) ? value : fallback;

const safeLink = (value: unknown): string | undefined =>
  typeof value === 'string' && /^(\/(?!\/)\S*|https:\/\/\S+)$/.test(value) ? value : undefined;

type Section = Record<string, unknown> & { type?: unknown };

function sectionHtml(section: Section, products: StorefrontProduct[], index: number): string {
  const id = `section-${index}`;
  switch (section.type) {
    case 'hero': {
      const href = safeLink(section.button_link);
      const button =
        section.button_label === undefined
          ? ''
          : `<p><a class="button" rel="noopener noreferrer" ${href ? `href="${e(href)}"` : ''}>${e(section.button_label)}</a></p>`;
      return `<section id="${id}" class="hero"><h1>${e(section.title)}</h1>${
        section.subtitle ? `<p class="subtitle">${e(section.subtitle)}</p>` : ''
      }${button}</section>`;
    }
    case 'text':
      return `<section id="${id}" class="text">${section.heading ? `<h2>${e(section.heading)}</h2>` : ''}${String(
        section.body ?? '',
      )
        .split(/\n{2,}/)
        .map((p) => `<p>${e(p)}</p>`)
        .join('')}</section>`;
    case 'product_grid': {
      const limit = typeof section.limit === 'number' ? section.limit : 6;
      const columns = typeof section.columns === 'number' ? Math.min(6, Math.max(1, section.columns)) : 3;
      const shown = products.slice(0, limit);
      const cards = shown.length
        ? shown
            .map(
              (p) =>
                `<li class="product"><span class="product-title">${e(p.title)}</span> <span class="price">${e(
                  p.price_display,
                )} ${e(p.currency)}</span></li>`,
            )
            .join('')
        : '<li class="empty">No products yet.</li>';
      return `<section id="${id}" class="products">${section.title ? `<h2>${e(section.title)}</h2>` : ''}<ul class="grid" style="grid-template-columns: repeat(${columns}, 1fr)">${cards}</ul></section>`;
    }
    case 'announcement': {
      const href = safeLink(section.link);
      const message = e(section.message);
      return `<section id="${id}" class="announcement">${
        href ? `<a rel="noopener noreferrer" href="${e(href)}">${message}</a>` : message
      }</section>`;
    }
    case 'countdown':
      return `<section id="${id}" class="countdown"><strong>${e(section.label)}</strong> <time datetime="${e(
        section.ends_at,
      )}">${e(section.ends_at)}</time></section>`;
    case 'testimonials': {
      const items = Array.isArray(section.items) ? (section.items as Record<string, unknown>[]) : [];
      return `<section id="${id}" class="testimonials">${section.title ? `<h2>${e(section.title)}</h2>` : ''}${items
        .map((i) => `<blockquote><p>${e(i.quote)}</p><footer>${e(i.author)}</footer></blockquote>`)
        .join('')}</section>`;
    }
    case 'banner':
      return `<section id="${id}" class="banner banner-${e(section.tone ?? 'info')}">${e(section.text)}</section>`;
    default:
      // A document is checked against its schema when saved; an unknown section is left out, never guessed at.
      return '';
  }
}

/** The page of a theme revision (the storefront as the preview shows it). */
export function renderThemePage(input: RenderInput): string {
  const s = effectiveSettings(input.base, input.settings);
  const primary = colorOf(s.primary_color, '#1a73e8');
  const background = colorOf(s.background_color, '#ffffff');
  const textColor = colorOf(s.text_color, '#202124');
  const accent = colorOf(s.accent_color, primary);
  const font = fonts[String(s.font_family)] ?? fonts.system!;
  const width = widths[String(s.layout_width)] ?? widths.normal!;
  const doc = input.document;
  const meta = (doc.meta ?? {}) as Record<string, unknown>;
  const sections = Array.isArray(doc.sections) ? (doc.sections as Section[]) : [];
  const title = meta.title ? String(meta.title) : input.shopName;
  const body = sections.map((section, i) => sectionHtml(section, input.products, i)).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
${meta.description ? `<meta name="description" content="${e(meta.description)}">` : ''}
<title>${e(title)} (preview)</title>
<style>
  body { margin: 0; font-family: ${font}; background: ${background}; color: ${textColor}; }
  .preview-bar { background: #222; color: #fff; font: 13px system-ui, sans-serif; padding: 6px 12px; }
  header, main { max-width: ${width}; margin: 0 auto; padding: 16px; }
  header .shop { color: ${primary}; font-weight: 700; font-size: 1.25rem; }
  .hero { padding: 48px 0; }
  .hero h1 { color: ${primary}; margin: 0 0 8px; }
  .button { display: inline-block; background: ${primary}; color: #fff; padding: 8px 16px; border-radius: 4px; text-decoration: none; }
  .grid { display: grid; gap: 12px; list-style: none; padding: 0; }
  .product { border: 1px solid ${primary}33; border-radius: 6px; padding: 12px; }
  .price { display: block; color: ${accent}; font-weight: 600; }
  .announcement, .banner { background: ${primary}; color: #fff; padding: 8px 12px; border-radius: 4px; margin: 8px 0; }
  .announcement a { color: #fff; }
  .banner-warning { background: #b26a00; } .banner-dark { background: #000; }
  blockquote { border-left: 4px solid ${accent}; margin: 12px 0; padding: 4px 12px; }
</style>
</head>
<body data-theme-base="${e(input.base)}" data-revision="${input.revision}">
${testModeBanner(input.livemode)}<div class="preview-bar" role="status">Preview of <strong>${e(input.themeName)}</strong> (${e(input.base)}, revision ${
    input.revision
  }) &middot; private link, valid until ${e(input.expiresAt.toISOString())}</div>
${s.show_shop_name === false ? '' : `<header><span class="shop">${e(input.shopName)}</span></header>`}
<main>
${body}
</main>
</body>
</html>`;
}

/** The page a preview URL shows once it no longer works (stopped, expired) or never did. */
export function previewGonePage(title: string, message: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex, nofollow"><title>${e(title)}</title>
<style>body { font-family: system-ui, sans-serif; max-width: 640px; margin: 64px auto; padding: 0 16px; }</style>
</head><body><h1>${e(title)}</h1><p>${e(message)}</p></body></html>`;
}

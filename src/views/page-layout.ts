// The one HTML shell of every hosted page a buyer or a shop owner sees (checkout, payment links, the sandbox gateway,
// the OAuth consent page): viewport, the shop's name, logo and colours from its branding (GET /store/branding), one
// inline stylesheet (styled buttons, visible focus, a layout that fits a 375 px phone) and the TEST MODE banner.
//
// Branding is written by merchants, so nothing of it reaches the page unchecked:
//   - colours only as `#rrggbb` (anything else: the defaults); text drawn on or in them is chosen for contrast
//     (WCAG AA, 4.5:1), so a pale brand colour cannot make a button unreadable;
//   - the logo only when its URL is on this server's own origin. A logo on another host is not rendered (the shop's
//     initial stands in): a buyer's invoice page would otherwise tell that host when, and from where, it is opened,
//     and every page keeps its policy of loading nothing from another host (`img-src 'self'`);
//   - every value through escapeHtml.
import escapeHtml from 'escape-html';
import { testModeBanner } from './test-mode';

const e = (value: unknown): string => escapeHtml(String(value ?? ''));

/** What a page shows of a shop: its name, its logo (already checked: same origin) and two colours. */
export interface PageBrand {
  name: string;
  logoUrl: string | null;
  primary: string;
  accent: string;
}

/** The colours of a shop that never set its own (src/domain/store/settings.ts stores these as its defaults). */
export const defaultBrandColors = { primary: '#1a73e8', accent: '#ff6d00' } as const;

const colorShape = /^#[0-9a-f]{6}$/i;

/**
 * A page's brand from a shop's branding settings. `publicUrl` is this server's address: a logo elsewhere is dropped
 * (see the top of this file), as is one that is not an https URL (the settings allow nothing else, but rows are old).
 */
export function pageBrand(
  branding: { name: string; logo_url: string | null; primary_color: string; accent_color: string },
  publicUrl: string,
): PageBrand {
  return {
    name: branding.name,
    logoUrl: sameOriginLogo(branding.logo_url, publicUrl),
    primary: colorShape.test(branding.primary_color)
      ? branding.primary_color.toLowerCase()
      : defaultBrandColors.primary,
    accent: colorShape.test(branding.accent_color) ? branding.accent_color.toLowerCase() : defaultBrandColors.accent,
  };
}

function sameOriginLogo(logoUrl: string | null, publicUrl: string): string | null {
  if (logoUrl === null) return null;
  try {
    const logo = new URL(logoUrl);
    return logo.protocol === 'https:' && logo.origin === new URL(publicUrl).origin ? logo.href : null;
  } catch {
    return null;
  }
}

// --- contrast (WCAG 2 relative luminance) -------------------------------------------------------------------------

const channels = (hex: string): [number, number, number] =>
  [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)) as never;

function luminance(hex: string): number {
  const [r, g, b] = channels(hex).map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/**
 * The text colour that reads best on `background`: white or black, never a softer shade, since only these two
 * guarantee 4.5:1 on every colour (a mid grey reaches 4.58 with black, less with anything lighter).
 */
export function inkOn(background: string): string {
  return contrast(background, '#ffffff') >= contrast(background, '#000000') ? '#ffffff' : '#000000';
}

/** `color` darkened until it reads as text on white (4.5:1): links and headings in the shop's colour stay legible. */
export function readableOnWhite(color: string): string {
  let [r, g, b] = channels(color);
  const hex = () => `#${[r, g, b].map((c) => Math.round(c).toString(16).padStart(2, '0')).join('')}`;
  while (contrast(hex(), '#ffffff') < 4.5) [r, g, b] = [r * 0.9, g * 0.9, b * 0.9];
  return hex();
}

// --- the page -----------------------------------------------------------------------------------------------------

function stylesheet(brand: PageBrand | undefined, maxWidth: string): string {
  const primary = brand?.primary ?? '#2b2f36';
  const accent = brand?.accent ?? '#6b7280';
  const link = readableOnWhite(primary);
  return `:root{--primary:${primary};--on-primary:${inkOn(primary)};--accent:${accent};--link:${link}}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:#f4f5f7;color:#1b1b1b;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.shell{max-width:${maxWidth};margin:0 auto;padding:1rem}
.brand{display:flex;align-items:center;gap:.75rem;padding:.9rem max(1rem,calc((100% - ${maxWidth})/2 + 1rem));background:#fff;border-top:4px solid var(--primary);
border-bottom:1px solid #e3e5e8;box-shadow:inset 0 -3px 0 -1px var(--accent)}
.brand .mark{flex:none;width:2.25rem;height:2.25rem;border-radius:.5rem;background:var(--primary);color:var(--on-primary);
display:grid;place-items:center;font-weight:700;font-size:1.1rem}
.brand img{flex:none;max-height:2.5rem;max-width:8rem;object-fit:contain}
.brand .name{font-weight:650;font-size:1.05rem;overflow-wrap:anywhere}
main.card{background:#fff;border:1px solid #e3e5e8;border-radius:.75rem;padding:1.25rem;margin:1rem 0}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 .25rem;overflow-wrap:anywhere}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}h3{font-size:1rem;margin:.25rem 0}
a{color:var(--link)}
.muted,.note{color:#555b65}.small{font-size:.85rem}
.order-id{margin:0 0 1rem;font-size:.85rem;color:#555b65}
code,.id{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:.85em;overflow-wrap:anywhere;word-break:break-all}
code{background:#f2f3f5;padding:.1rem .3rem;border-radius:.25rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{text-align:left;padding:.45rem .4rem;border-bottom:1px solid #e3e5e8;vertical-align:top}
td:first-child,th:first-child{padding-left:0}td:last-child,th:last-child{padding-right:0}
.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tfoot th{font-size:1.05rem}caption{text-align:left;caption-side:top;padding-bottom:.25rem}.status{font-weight:600}
.badge{display:inline-block;padding:.1rem .55rem;border-radius:999px;background:#eef0f3;color:#1b1b1b;font-size:.85rem;font-weight:600}
.notice{border-radius:.5rem;padding:.75rem 1rem;margin:1rem 0;font-weight:600}
.notice.success{background:#e7f5ec;color:#0f5132;border:1px solid #9fd4b1}
.notice.info{background:#eef4fd;color:#173f73;border:1px solid #b6cdf0}
.notice.warn{background:#fff4e0;color:#6b3d00;border:1px solid #f0c27a}
.notice.error,.error{color:#8a1010}
.notice.error{background:#fdecec;border:1px solid #f1aeae}
.notice p{margin:.25rem 0 0;font-weight:400}
form.actions,.actions{display:flex;flex-wrap:wrap;gap:.6rem;margin:.75rem 0}
.actions form{margin:0}
label{display:block;font-weight:600;margin:.75rem 0 .3rem}
input[type=email],input[type=password],input[type=text],select{display:block;width:100%;max-width:26rem;font:inherit;
padding:.55rem .7rem;border:1px solid #8a9099;border-radius:.4rem;background:#fff;color:#1b1b1b;font-weight:400;margin-top:.3rem}
button,.button{font:inherit;font-weight:600;min-height:2.75rem;padding:.6rem 1.2rem;border-radius:.5rem;cursor:pointer;
border:1px solid var(--primary);background:var(--primary);color:var(--on-primary);text-decoration:none;display:inline-block}
button:hover{filter:brightness(.93)}
button.secondary,.button.secondary{background:#fff;color:#1b1b1b;border-color:#8a9099}
button.danger{background:#fff;color:#8a1010;border-color:#c46060}
:focus-visible{outline:3px solid var(--link);outline-offset:2px}
input:focus-visible,select:focus-visible{outline-offset:0}
.delivery{border:1px solid #e3e5e8;border-radius:.5rem;padding:.75rem 1rem;margin:.75rem 0}
ul.codes,ul.links,ul.files{padding-left:1.2rem}
footer.page-foot{text-align:center;color:#555b65;font-size:.8rem;padding:0 1rem 1.5rem}
@media (max-width:30rem){.shell{padding:.5rem}main.card{padding:1rem;border-radius:.5rem}h1{font-size:1.3rem}
th,td{padding:.4rem .25rem}.actions button,form.actions button{flex:1 1 auto}}`;
}

export interface PageInput {
  title: string;
  /** The shop the page belongs to; absent on pages of no shop (the consent page before sign-in). */
  brand?: PageBrand;
  /** Already escaped HTML: the page's content, put in its `<main>`. */
  body: string;
  /** `false` (a test shop's page) puts the TEST MODE banner on top. */
  livemode?: boolean;
  /** The content column's width (a form page is narrower than an invoice). */
  maxWidth?: string;
  /** CSS of the page family's own parts, after the shared stylesheet. */
  style?: string;
}

function brandHeader(brand: PageBrand): string {
  const mark = brand.logoUrl
    ? `<img src="${e(brand.logoUrl)}" alt="" width="128" height="40">`
    : `<span class="mark" aria-hidden="true">${e(Array.from(brand.name.trim())[0]?.toUpperCase() ?? '')}</span>`;
  return `<header class="brand" id="brand">${mark}<span class="name" id="shop-name">${e(brand.name)}</span></header>`;
}

/** A complete page: the banner of a test shop first, then the shop's header, the content, and the stylesheet. */
export function renderPage({ title, brand, body, livemode = true, maxWidth = '44rem', style = '' }: PageInput): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${e(title)}</title>
<style>${stylesheet(brand, maxWidth)}${style}</style>
</head><body>${testModeBanner(livemode)}${brand ? brandHeader(brand) : ''}<div class="shell"><main class="card" id="main">
${body}
</main></div></body></html>`;
}

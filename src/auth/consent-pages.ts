// The HTML of the hosted OAuth consent page: sign-in, approval, and refusal pages. Server-rendered, inline CSS only,
// no script and nothing loaded from another host (the Content-Security-Policy in src/auth/consent.ts forbids it);
// every value shown or put in an attribute goes through escapeHtml (app names, emails and the request's own
// parameters are chosen by others).
import escapeHtml from 'escape-html';
import { renderPage, type PageBrand } from '../views/page-layout';
import { describeScope } from './scope-descriptions';

const e = (value: unknown): string => escapeHtml(String(value ?? ''));

/** The authorization request as the forms carry it (hidden fields, re-validated on every submit). */
export interface AuthorizationParams {
  response_type: string;
  client_id: string;
  redirect_uri: string;
  scope: string;
  state?: string;
  code_challenge?: string;
  code_challenge_method?: string;
  /** `live` (absent: live) or `test`: the mode of the shop the app is installed in. */
  mode?: 'live' | 'test';
}

export const authorizationParamNames = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'mode',
] as const;

/** The installation's mode as the pages say it: test mode is said loudly, before anything else. */
function modeNotice(mode: AuthorizationParams['mode'], shopName?: string): string {
  const shop = shopName === undefined ? 'your shop' : e(shopName);
  return mode === 'test'
    ? `<p class="mode test" id="mode" data-mode="test"><strong>Install in TEST MODE:</strong> the app sees only test data (the test mode of ${shop}), never live orders, customers or payments.</p>`
    : `<p class="mode live" id="mode" data-mode="live"><strong>Install in LIVE MODE:</strong> the app works with the real data of ${shop}.</p>`;
}

// The consent family's own parts; the rest (buttons, fields, focus, phone layout) is the shared layout's.
const consentStyle = `ul.scopes{padding-left:1.2rem}ul.scopes li{margin:.4rem 0}
.mode{padding:.6rem .8rem;border-radius:.4rem}.mode.test{background:#fff3cd;border:2px solid #b8860b}
.mode.live{background:#eef6ee;border:1px solid #7fbf7f}.grantee{margin:.25rem 0 1rem}`;

function page(title: string, body: string, brand?: PageBrand): string {
  return renderPage({ title, body, brand, maxWidth: '34rem', style: consentStyle });
}

function hiddenFields(params: AuthorizationParams, csrfToken: string): string {
  const fields = authorizationParamNames
    .filter((name) => params[name] !== undefined)
    .map((name) => `<input type="hidden" name="${name}" value="${e(params[name])}">`);
  fields.push(`<input type="hidden" name="csrf_token" value="${e(csrfToken)}">`);
  return fields.join('\n');
}

export function signInPage(input: {
  clientName: string;
  params: AuthorizationParams;
  csrfToken: string;
  error?: string;
  email?: string;
}): string {
  return page(
    `Sign in to approve ${input.clientName}`,
    `<h1>Sign in to approve <span id="app-name">${e(input.clientName)}</span></h1>
${modeNotice(input.params.mode)}
<p>Sign in with your shop owner account to review what this app asks for.</p>
${input.error ? `<p class="error" id="error" role="alert">${e(input.error)}</p>` : ''}
<form method="post" action="/oauth/sign-in" id="sign-in">
${hiddenFields(input.params, input.csrfToken)}
<label for="email">Email</label><input type="email" id="email" name="email" autocomplete="username" required maxlength="254" value="${e(input.email ?? '')}">
<label for="password">Password</label><input type="password" id="password" name="password" autocomplete="current-password" required maxlength="256">
<div class="actions"><button type="submit">Sign in</button></div>
</form>`,
  );
}

export function consentPage(input: {
  clientName: string;
  /** The shop the app would get access to (the owner's shop, in its branding): named on the page, in its colours. */
  shop: PageBrand;
  scopes: string[];
  redirectUri: string;
  email: string;
  params: AuthorizationParams;
  csrfToken: string;
}): string {
  const scopes = input.scopes
    .map((s) => `<li data-scope="${e(s)}"><code>${e(s)}</code>: ${e(describeScope(s))}</li>`)
    .join('\n');
  const hidden = hiddenFields(input.params, input.csrfToken);
  return page(
    `Approve ${input.clientName} for ${input.shop.name}`,
    `<h1><span id="app-name">${e(input.clientName)}</span> wants access to <span id="grant-shop">${e(input.shop.name)}</span></h1>
${modeNotice(input.params.mode, input.shop.name)}
<p>Signed in as <strong id="owner-email">${e(input.email)}</strong>.</p>
<p>If you approve, the app may:</p>
<ul class="scopes" id="scopes">
${scopes}
</ul>
<p class="note">You will be sent back to <code>${e(input.redirectUri)}</code>.</p>
<div class="actions">
<form method="post" action="/oauth/consent" id="approve">${hidden}
<input type="hidden" name="decision" value="approve"><button type="submit" class="approve">Approve access to ${e(input.shop.name)}</button></form>
<form method="post" action="/oauth/consent" id="deny">${hidden}
<input type="hidden" name="decision" value="deny"><button type="submit" class="deny secondary">Deny</button></form>
</div>
<form method="post" action="/oauth/sign-out" id="sign-out">${hidden}
<p class="small muted">Not ${e(input.email)}? <button type="submit" class="secondary">Sign out</button></p></form>`,
    input.shop,
  );
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${e(title)}</h1><p id="message">${e(message)}</p>`);
}

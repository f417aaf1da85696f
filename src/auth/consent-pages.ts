// The HTML of the hosted OAuth consent page: sign-in, approval, and refusal pages. Server-rendered, inline CSS only,
// no script and nothing loaded from another host (the Content-Security-Policy in src/auth/consent.ts forbids it);
// every value shown or put in an attribute goes through escapeHtml (app names, emails and the request's own
// parameters are chosen by others).
import escapeHtml from 'escape-html';
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
function modeNotice(mode: AuthorizationParams['mode']): string {
  return mode === 'test'
    ? `<p class="mode test" id="mode" data-mode="test"><strong>Install in TEST MODE:</strong> the app sees only test data (your shop's test mode), never live orders, customers or payments.</p>`
    : `<p class="mode live" id="mode" data-mode="live"><strong>Install in LIVE MODE:</strong> the app works with your shop's real data.</p>`;
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${e(title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:0 auto;max-width:34rem;padding:1rem 2rem;line-height:1.5;color:#222}
h1{font-size:1.4rem}label{display:block;margin:.6rem 0 .2rem}input[type=email],input[type=password]{width:100%;
font-size:1rem;padding:.4rem;box-sizing:border-box}button{font-size:1rem;padding:.5rem 1.2rem;cursor:pointer;margin-top:.8rem}
ul.scopes{padding-left:1.2rem}ul.scopes li{margin:.4rem 0}code{background:#f2f2f2;padding:.1rem .3rem}
.error{color:#a00;font-weight:600}.note{color:#555;font-size:.9rem}.actions form{display:inline-block;margin-right:.6rem}
.mode{padding:.5rem .8rem;border-radius:.3rem}.mode.test{background:#fff3cd;border:2px solid #b8860b}.mode.live{background:#eef6ee;border:1px solid #9c9}
.approve{background:#1a7f37;color:#fff;border:0;border-radius:.3rem}.deny{background:#eee;border:1px solid #bbb;border-radius:.3rem}</style>
</head><body>${body}</body></html>`;
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
<button type="submit">Sign in</button>
</form>`,
  );
}

export function consentPage(input: {
  clientName: string;
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
    `Approve ${input.clientName}`,
    `<h1><span id="app-name">${e(input.clientName)}</span> wants access to your shop</h1>
${modeNotice(input.params.mode)}
<p>Signed in as <strong id="owner-email">${e(input.email)}</strong>.</p>
<p>If you approve, the app may:</p>
<ul class="scopes" id="scopes">
${scopes}
</ul>
<p class="note">You will be sent back to <code>${e(input.redirectUri)}</code>.</p>
<div class="actions">
<form method="post" action="/oauth/consent" id="approve">${hidden}
<input type="hidden" name="decision" value="approve"><button type="submit" class="approve">Approve</button></form>
<form method="post" action="/oauth/consent" id="deny">${hidden}
<input type="hidden" name="decision" value="deny"><button type="submit" class="deny">Deny</button></form>
</div>
<form method="post" action="/oauth/sign-out" id="sign-out">${hidden}
<button type="submit" class="deny">Sign out</button></form>`,
  );
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${e(title)}</h1><p id="message">${e(message)}</p>`);
}

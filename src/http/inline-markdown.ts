// The error catalog's `doc` strings (src/errors.ts) are written in Markdown for the spec and the SDK's comments; the
// /docs/errors page showed their backticks raw. They use one piece of Markdown, the code span, so this renders
// exactly that and escapes everything else: no library, and no way for a catalog text to inject markup.
import escapeHtml from 'escape-html';

/** `a` `b` -> escaped text with each backtick pair's content in <code>; an unpaired backtick stays a backtick. */
export function inlineMarkdownToHtml(text: string): string {
  const parts = text.split('`');
  // An odd count of backticks leaves the last one unpaired: it and what follows are plain text.
  const paired = parts.length % 2 === 1 ? parts : [...parts.slice(0, -2), `${parts.at(-2)}\`${parts.at(-1)}`];
  return paired.map((part, i) => (i % 2 === 1 ? `<code>${escapeHtml(part)}</code>` : escapeHtml(part))).join('');
}

// The errors page renders the catalog's code spans (src/http/inline-markdown.ts): backticks become <code>, and
// nothing in a text becomes markup.
import { inlineMarkdownToHtml } from '../../src/http/inline-markdown';
import { errorCatalog } from '../../src/errors';

test('code spans become <code>, their content and the text around them escaped', () => {
  expect(inlineMarkdownToHtml('Send `Authorization: Bearer <key>` & retry')).toBe(
    'Send <code>Authorization: Bearer &lt;key&gt;</code> &amp; retry',
  );
  expect(inlineMarkdownToHtml('`a` and `b`')).toBe('<code>a</code> and <code>b</code>');
  expect(inlineMarkdownToHtml('no code')).toBe('no code');
  expect(inlineMarkdownToHtml('<script>alert(1)</script>')).toBe('&lt;script&gt;alert(1)&lt;/script&gt;');
});

test('an unpaired backtick stays a backtick, and text after it stays text', () => {
  expect(inlineMarkdownToHtml('`a` then ` alone <b>')).toBe('<code>a</code> then ` alone &lt;b&gt;');
  expect(inlineMarkdownToHtml('`')).toBe('`');
});

test('every doc of the catalog renders with no backtick left', () => {
  for (const [code, e] of Object.entries(errorCatalog)) {
    expect([code, inlineMarkdownToHtml(e.doc)]).not.toEqual([code, expect.stringContaining('`')]);
  }
});

// What tells a reader that a hosted page or a mail belongs to a shop's TEST MODE (issue 26): one notice, one banner.
// Every page of a test shop (checkout, payment link, sandbox gateway, theme preview) and every mail it queues
// carries it; a live page or mail never does, and is byte for byte what it was before test mode existed.
import escapeHtml from 'escape-html';

/** The words of the banner and of the mail's first line. */
export const TEST_MODE_NOTICE = "TEST MODE — no real money moves; this page belongs to the shop's test mode.";

/** The subject prefix of a test shop's mail. */
export const TEST_MODE_SUBJECT_PREFIX = '[TEST MODE] ';

/**
 * The banner at the top of a hosted page: empty for a live shop. Styled inline (the pages' CSP allows inline style,
 * and each page family has a layout of its own), white on dark orange (contrast above 4.5:1), announced as a status.
 */
export function testModeBanner(livemode: boolean): string {
  if (livemode) return '';
  return `<div class="test-mode-banner" id="test-mode-banner" role="status" aria-label="Test mode" style="background:#b33f00;color:#fff;font:600 15px/1.4 system-ui,sans-serif;padding:.6rem 1rem;margin:0 0 1rem;border:3px dashed #fff;outline:3px solid #b33f00;text-align:center">${escapeHtml(
    TEST_MODE_NOTICE,
  )}</div>`;
}

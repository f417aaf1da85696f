// Headless Chromium for the browser suites: where the machine has it, a test that is skipped (with the reason) where
// it has not, and a browser with a fresh profile of its own that its close() removes again.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const chromiumPath = '/usr/bin/chromium';
export const haveChromium = existsSync(chromiumPath);

/** `test` where Chromium is installed; otherwise `test.skip`, with one warning naming the suite and the fix. */
export function chromiumTest(suite: string): typeof test {
  if (!haveChromium) console.warn(`${suite} skipped: ${chromiumPath} is missing (apt-get install -y chromium)`);
  return haveChromium ? test : (test.skip as typeof test);
}

export interface Chromium {
  browser: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), 'mdapi-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    // No sandbox (containers), and nothing that calls out of the machine (updates, sync, QUIC probes).
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

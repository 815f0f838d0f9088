import type { Browser, Page } from 'puppeteer-core';

/** What the ops console's Chromium tests share: a signed-in page, its text, a click as a person makes it. */

export interface OpenOptions {
  /** The viewport width (a laptop by default; 390 is a phone). */
  width?: number;
  /** What shows once signed in; null: nothing to wait for (a refused token). */
  waitFor?: string | null;
  dark?: boolean;
}

/** A fresh browser context, signed in by pasting `token`; page errors and console errors go to `problems`. */
export async function openConsole(browser: Browser, origin: string, token: string, problems: string[], opts: OpenOptions = {}): Promise<Page> {
  const page = await (await browser.createBrowserContext()).newPage();
  page.setDefaultTimeout(30_000);
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(msg.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  // A phone's width is a phone: mobile emulation, where a page without a viewport meta is laid out 980 px wide.
  const width = opts.width ?? 1400;
  await page.setViewport(width <= 480 ? { width, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : { width, height: 900 });
  if (opts.dark) await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
  await page.goto(`${origin}/ops`);
  await page.type('#token', token);
  await page.click('#sign-in button[type=submit]');
  const waitFor = opts.waitFor === undefined ? 'tr[data-job]' : opts.waitFor;
  if (waitFor) await page.waitForSelector(waitFor);
  return page;
}

export const text = (page: Page, sel: string): Promise<string> => page.$eval(sel, (e) => e.textContent ?? '');

/** Clicks through the DOM (the element may sit below the fold of a narrow page). */
export const click = (page: Page, sel: string): Promise<void> =>
  page.waitForSelector(sel).then(() => page.$eval(sel, (e) => (e as unknown as { click(): void }).click()));

export const disabled = (page: Page, sel: string): Promise<boolean> => page.$eval(sel, (b) => (b as unknown as { disabled: boolean }).disabled);

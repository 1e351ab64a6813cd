import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/**
 * axe-core in the browser for the console and portal end-to-end tests: a page as it is now (`seriousViolations`), and
 * every menu, popover and dialog the test opens (`checkOverlaysWithAxe`). axe is evaluated through the DevTools
 * protocol, which the pages' Content-Security-Policy does not govern (a script tag would be refused, as it should).
 */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** What an overlay is, for the checks: dialogs, menus, select lists and every Mantine popover. */
const OVERLAYS = '[role="dialog"], [role="alertdialog"], [role="menu"], [role="listbox"], .mantine-Popover-dropdown';
const CHECKED = 'data-axe-checked';

type AxeResult = { violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] };

/** One axe run at a time per page (axe refuses a second while one runs). */
const queues = new WeakMap<Page, Promise<unknown>>();
function serialized<T>(page: Page, work: () => Promise<T>): Promise<T> {
  const run = (queues.get(page) ?? Promise.resolve()).then(work, work);
  queues.set(page, run.catch(() => undefined));
  return run;
}

async function loadAxe(page: Page) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
}

/** `work`'s answer; an error naming `what` when it takes longer than `seconds` (a hung check must not hold every later action). */
function withinSeconds<T>(seconds: number, what: string, work: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} gave no answer within ${seconds} s`)), seconds * 1000);
  });
  return Promise.race([work(), late]).finally(() => clearTimeout(timer));
}

/** `work`'s answer, or null when the page navigated or closed meanwhile (its overlays are gone with it). */
async function inPage<T>(page: Page, work: () => Promise<T>): Promise<T | null> {
  try {
    return await work();
  } catch (error) {
    if (page.isClosed() || /context was destroyed|Target .*closed|navigat/i.test((error as Error).message)) return null;
    throw error;
  }
}

const serious = (result: AxeResult) =>
  result.violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical').map((violation) => `${violation.id}: ${violation.nodes.map((node) => JSON.stringify(node.target)).join(', ')}`);

/** Serious and critical axe-core violations of the page as it is now: "rule: targets". */
export function seriousViolations(page: Page): Promise<string[]> {
  return serialized(page, async () => {
    await loadAxe(page);
    return serious(await page.evaluate(() => (window as unknown as { axe: { run(context: Document, options: object): Promise<AxeResult> } }).axe.run(document, { resultTypes: ['violations'], iframes: false })));
  });
}

export interface OverlayChecks {
  /** Each overlay checked, as "role “accessible name”" (e.g. `menu “Account: pat@customer.test”`). */
  checked: string[];
  /** Serious and critical violations found in them: "role “name”: rule: targets". */
  violations: string[];
}

/**
 * Runs axe on every menu, popover and dialog that opens on `page`, once each, before the test's next action or
 * auto-waiting assertion (Playwright's locator handler): an overlay is checked while it is open and settled, whatever
 * the test does next. Findings go to `checks`; the suites assert that `violations` stays empty.
 */
export async function checkOverlaysWithAxe(page: Page, checks: OverlayChecks = { checked: [], violations: [] }): Promise<OverlayChecks> {
  const unchecked = page.locator(OVERLAYS.split(', ').map((selector) => `${selector}:not([${CHECKED}])`).join(', ')).filter({ visible: true });
  await page.addLocatorHandler(
    unchecked.first(),
    () =>
      serialized(page, async () => {
        let found: Awaited<ReturnType<typeof checkOpenOverlays>> | null;
        try {
          found = await inPage(page, () =>
            withinSeconds(20, `axe checking the overlays open on ${page.url()}`, async () => {
              await loadAxe(page);
              return page.evaluate(checkOpenOverlays, { selector: OVERLAYS, checked: CHECKED });
            }),
          );
        } catch (error) {
          // Recorded, not thrown: the suite fails on it at the end, and the test's own action goes on.
          checks.violations.push(`axe: ${(error as Error).message}`);
          return;
        }
        for (const { overlay, result } of found ?? []) {
          checks.checked.push(overlay);
          checks.violations.push(...serious(result).map((violation) => `${overlay}: ${violation}`));
        }
      }),
    { noWaitAfter: true },
  );
  return checks;
}

/** In the page: axe on each open, unchecked overlay (the outermost of nested ones), each marked checked first. */
async function checkOpenOverlays({ selector, checked }: { selector: string; checked: string }) {
  const axe = (window as unknown as { axe: { run(context: Element, options: object): Promise<AxeResult> } }).axe;
  const visible = [...document.querySelectorAll(selector)].filter((element) => !element.hasAttribute(checked) && element.getClientRects().length > 0);
  // A popover's menu or list is checked once, as the popover's content.
  const outermost = visible.filter((element) => !visible.some((other) => other !== element && other.contains(element)));
  const results: { overlay: string; result: AxeResult }[] = [];
  for (const element of outermost) {
    for (const inner of [element, ...element.querySelectorAll(selector)]) inner.setAttribute(checked, '');
    const labelled = element.matches('[role]:not([role="presentation"])') ? element : (element.querySelector('[role]:not([role="presentation"])') ?? element);
    const labeller = document.getElementById(labelled.getAttribute('aria-labelledby') ?? '');
    const name = labelled.getAttribute('aria-label') ?? labeller?.getAttribute('aria-label') ?? labeller?.textContent?.trim() ?? '';
    results.push({ overlay: `${labelled.getAttribute('role') ?? 'popover'} “${name}”`, result: await axe.run(element, { resultTypes: ['violations'], iframes: false }) });
  }
  return results;
}

import { describe, expect, it } from 'vitest';
import { button, mjmlToHtml, page } from '../server/src/email/layout.js';

// What a reader's mail client loads when an email is opened: nothing from a third party (no web fonts, no
// images or styles by URL), so opening it tells nobody anything and it renders the same offline.

/** Every URL the HTML would make a mail client fetch by itself (links the reader clicks are not fetched). */
function fetchedUrls(html: string): string[] {
  const urls = [...html.matchAll(/<(?:link|img|script|iframe|source)\b[^>]*\b(?:href|src)="([^"]+)"/gi)].map((match) => match[1]);
  const css = [...html.matchAll(/url\(\s*['"]?([^'")]+)/gi), ...html.matchAll(/@import\s+(?:url\()?\s*['"]?([^'");]+)/gi)].map((match) => match[1]);
  return [...urls, ...css];
}

describe('email privacy', () => {
  it('the email frame loads no web font or any other remote resource, even with Roboto in the font stack', async () => {
    const html = await mjmlToHtml(page({ title: 'Hello', preview: 'Hello', brand: 'Acme', body: `<mj-section><mj-column>${button('https://licensing.example/', 'Open')}</mj-column></mj-section>`, footer: 'Footer' }));
    expect(html).toContain('Roboto'); // the stack is kept for readers who have the font installed
    expect(html).not.toMatch(/fonts\.googleapis|fonts\.gstatic/);
    expect(fetchedUrls(html)).toEqual([]);
    // Links the reader may click stay.
    expect(html).toContain('href="https://licensing.example/"');
  });
});

/**
 * The documentation pages the console points to. The docs are Markdown in the repository's `docs/` (also built as
 * the VitePress site), not served by this server, so the console names the page by its path in the repository.
 * `test/console-docs-links.test.ts` fails when a page or anchor named here, or anywhere in console/src, does not exist.
 */
export const DOCS = {
  sdk: { path: 'docs/integrate/sdk.md', title: 'Client SDK' },
  restApi: { path: 'docs/integrate/rest-api.md', title: 'REST API guide' },
  webhooks: { path: 'docs/integrate/webhooks.md', title: 'Webhooks' },
  errors: { path: 'docs/reference/errors.md', title: 'Error codes' },
} as const;

export type DocsPage = keyof typeof DOCS;

/** "the Client SDK guide (docs/integrate/sdk.md)": how a page is named in the console's text. */
export function docsReference(page: DocsPage): string {
  return `${DOCS[page].title} guide (${DOCS[page].path} in the Keyforge repository)`;
}

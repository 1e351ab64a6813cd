import { defineConfig } from 'vitepress';

// The documentation site: `pnpm docs:dev` serves it, `pnpm docs:build` builds it into docs/.vitepress/dist.
// A link to a page that does not exist fails the build (VitePress's own check).
export default defineConfig({
  title: 'Keyforge',
  description: 'Self-hosted, multi-tenant software licensing: keys, seats, offline tokens, a tamper-evident activity log.',
  lang: 'en',
  // Built output and Vite's cache stay out of docs/, so a grep over the sources finds only sources.
  outDir: '../dist/docs',
  cacheDir: '../node_modules/.cache/vitepress',
  cleanUrls: true,
  // Links to http://localhost:4000 (a server you started) are not pages of this site; every other link is checked.
  ignoreDeadLinks: 'localhostLinks',
  lastUpdated: false,
  // docs/examples holds runnable programs and their tests; pages include them as snippets, they are not pages.
  srcExclude: ['examples/**', 'scripts/**', '**/node_modules/**'],
  markdown: {
    headers: { level: [2, 3] },
  },
  themeConfig: {
    outline: { level: [2, 3] },
    search: { provider: 'local' },
    nav: [
      { text: 'Getting started', link: '/guide/getting-started' },
      { text: 'Integrate', link: '/integrate/sdk' },
      { text: 'Operate', link: '/operate/configuration' },
      { text: 'Reference', link: '/reference/errors' },
      { text: 'Changelog', link: '/changelog' },
    ],
    sidebar: [
      {
        text: 'Introduction',
        items: [
          { text: 'What Keyforge is', link: '/' },
          { text: 'Getting started', link: '/guide/getting-started' },
          { text: 'Licensing models', link: '/guide/licensing-models' },
          { text: 'Troubleshooting', link: '/guide/troubleshooting' },
          { text: 'Migrating from another service', link: '/guide/migrating' },
        ],
      },
      {
        text: 'Integrate your application',
        items: [
          { text: 'SDK guide (TypeScript, JavaScript)', link: '/integrate/sdk' },
          { text: 'Python SDK', link: '/integrate/sdk-python' },
          { text: 'Go SDK', link: '/integrate/sdk-go' },
          { text: '.NET SDK (C#)', link: '/integrate/sdk-dotnet' },
          { text: 'REST API guide (other languages)', link: '/integrate/rest-api' },
          { text: 'License files and air-gapped activation', link: '/integrate/license-files' },
          { text: 'Management API', link: '/integrate/management-api' },
          { text: 'Webhooks', link: '/integrate/webhooks' },
          { text: 'Payment providers', link: '/integrate/payments' },
          { text: 'Release distribution', link: '/integrate/releases' },
          { text: 'Update feeds (Electron, Tauri)', link: '/integrate/update-feeds' },
        ],
      },
      {
        text: 'Console guide',
        items: [
          { text: 'The admin console', link: '/console' },
          { text: 'Customer portal', link: '/guide/customer-portal' },
        ],
      },
      {
        text: 'Operate',
        items: [
          { text: 'Configuration', link: '/operate/configuration' },
          { text: 'Deployment', link: '/operate/deployment' },
          { text: 'High availability', link: '/operate/high-availability' },
          { text: 'Backup and restore', link: '/operate/backup' },
          { text: 'Upgrades and migrations', link: '/operate/upgrades' },
          { text: 'Operator CLI', link: '/operate/cli' },
          { text: 'Scheduled jobs and email', link: '/operate/jobs-and-email' },
          { text: 'Observability and runbook', link: '/operate/observability' },
          { text: 'Failure modes', link: '/operate/failures' },
        ],
      },
      { text: 'Security model', link: '/security' },
      {
        text: 'Reference',
        items: [
          { text: 'REST API (OpenAPI)', link: '/reference/rest' },
          { text: 'Error codes', link: '/reference/errors' },
          { text: 'Limits', link: '/reference/limits' },
          { text: 'Versioning and deprecation', link: '/reference/versioning' },
          {
            text: 'GraphQL schema',
            link: '/reference/graphql/',
            collapsed: true,
            items: [
              { text: 'Queries', link: '/reference/graphql/queries' },
              { text: 'Mutations', link: '/reference/graphql/mutations' },
              { text: 'Object types', link: '/reference/graphql/objects' },
              { text: 'Input types', link: '/reference/graphql/inputs' },
              { text: 'Enums', link: '/reference/graphql/enums' },
              { text: 'Scalars', link: '/reference/graphql/scalars' },
            ],
          },
        ],
      },
      { text: 'Architecture', link: '/architecture' },
      { text: 'Performance', link: '/performance' },
      { text: 'Development', link: '/development' },
      { text: 'Changelog', link: '/changelog' },
    ],
  },
});

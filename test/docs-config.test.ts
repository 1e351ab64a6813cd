import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_PAGE, renderConfigurationPage } from '../docs/scripts/config-reference.js';
import { EnvSchema, describeEnvironment, loadConfig } from '../server/src/config.js';

// The configuration reference (docs/operate/configuration.md) is generated from the schema that validates the
// environment: every variable must carry a description, and the committed page must be what the schema gives.
describe('configuration reference', () => {
  it('documents every variable of the schema', () => {
    const undocumented = describeEnvironment().filter((variable) => !variable.description?.trim()).map((v) => v.name);
    expect(undocumented).toEqual([]);
    expect(describeEnvironment().map((v) => v.name)).toEqual(Object.keys(EnvSchema.shape));
  });

  it('lists each variable once, with the default the schema gives', () => {
    const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
    for (const name of Object.keys(EnvSchema.shape)) {
      expect(page.match(new RegExp(`^\\| \`${name}\` \\|`, 'gm')), name).toHaveLength(1);
    }
    const defaults = loadConfig({});
    expect(page).toContain(`| \`PORT\` | \`${defaults.port}\` |`);
    expect(page).toContain(`| \`JOBS_WORKER\` | \`${defaults.jobsWorker}\` |`);
    expect(page).toContain(`| \`POSTMARK_API_URL\` | \`${defaults.postmarkApiUrl}\` |`);
  });

  it('is not stale (run `tsx docs/scripts/config-reference.ts` after changing the schema)', () => {
    expect(readFileSync(CONFIGURATION_PAGE, 'utf8')).toBe(renderConfigurationPage());
  });
});

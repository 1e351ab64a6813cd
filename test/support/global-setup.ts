import type { TestProject } from 'vitest/node';
import { applyMigrations } from '../../server/src/db/migrate.js';
import { grantAppRole } from '../../server/src/db/roles.js';
import { APP_ROLE, appRoleUrl, createDatabase, dropDatabase, uniqueName } from './pg.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
  }
}

/** Migrates one template database (as the owner) and grants the app role; every test file clones it (CREATE DATABASE … TEMPLATE). */
export default async function setup(project: TestProject) {
  const name = uniqueName('kf_template');
  const url = await createDatabase(name);
  await applyMigrations({ kind: 'pg', url });
  // The two-role setup of production: the app connects as APP_ROLE (append-only audit log); clones keep the grants.
  await grantAppRole(url, appRoleUrl(url));
  project.provide('templateDatabase', name);
  return async () => {
    await dropDatabase(name);
  };
}

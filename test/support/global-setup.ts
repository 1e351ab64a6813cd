import type { TestProject } from 'vitest/node';
import { applyMigrations } from '../../server/src/db/migrate.js';
import { createDatabase, dropDatabase, uniqueName } from './pg.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
  }
}

/** Migrates one template database; every test file clones it (CREATE DATABASE … TEMPLATE). */
export default async function setup(project: TestProject) {
  const name = uniqueName('kf_template');
  const url = await createDatabase(name);
  await applyMigrations({ kind: 'pg', url });
  project.provide('templateDatabase', name);
  return async () => {
    await dropDatabase(name);
  };
}

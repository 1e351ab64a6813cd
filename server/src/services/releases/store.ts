import path from 'node:path';
import type { Config } from '../../config.js';
import { FileArtifactStore } from './file-store.js';
import { S3ArtifactStore } from './s3-store.js';
import type { ArtifactStore } from './storage.js';

const stores = new WeakMap<Config, ArtifactStore>();

/**
 * The artifact store `RELEASES_STORE` names, one per configuration (so per process): `file` keeps artifacts under
 * `DATA_DIR/releases`; `s3` in the configured bucket.
 */
export function artifactStoreFor(config: Config): ArtifactStore {
  let store = stores.get(config);
  if (!store) {
    const { s3 } = config.releases;
    // The configuration refuses RELEASES_STORE=s3 without a bucket.
    store = config.releases.store === 's3' ? new S3ArtifactStore({ ...s3, bucket: s3.bucket! }) : new FileArtifactStore(path.join(config.dataDir, 'releases'));
    stores.set(config, store);
  }
  return store;
}

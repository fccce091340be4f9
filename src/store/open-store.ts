import { join } from 'node:path';
import { warnIfNetworkFileSystem } from './network-fs.js';
import { clothoHome } from './paths.js';
import { parseS3Url, S3Store } from './s3-store.js';
import { FileSystemStore, type TrajectoryStore } from './trajectory-store.js';

/** What `--store` takes: a directory, or a bucket and prefix (`s3://bucket/prefix`). */
export const STORE_FLAG_HELP = 'trajectory store: a directory or s3://bucket/prefix (default $CLOTHO_HOME/store)';

/** True for a `--store` value that names an object store rather than a directory. */
export function isObjectStoreSpec(spec: string): boolean {
  return /^s3:\/\//i.test(spec);
}

/**
 * The trajectory store `--store` names: `s3://bucket/prefix` is an S3 bucket (endpoint, region and credentials from
 * the AWS SDK's usual environment variables and profile, path style from `?path_style=1` or CLOTHO_S3_PATH_STYLE),
 * anything else a directory; none is `$CLOTHO_HOME/store`. A directory on a network file system is warned about: it is
 * for local disk only (`network-fs.ts`).
 */
export function openStore(spec: string | undefined, env: NodeJS.ProcessEnv = process.env): TrajectoryStore {
  if (spec !== undefined && isObjectStoreSpec(spec)) return new S3Store(parseS3Url(spec, env));
  if (spec && /^[a-z][a-z0-9+.-]*:\/\//i.test(spec))
    throw new Error(`--store ${spec}: only directories and s3:// URLs are trajectory stores`);
  const store = new FileSystemStore(spec ? spec : join(clothoHome(env), 'store'));
  warnIfNetworkFileSystem(store.root);
  return store;
}

/** How messages name a store: its directory, or its s3:// URL. */
export function storeLabel(store: TrajectoryStore): string {
  if (store instanceof FileSystemStore) return store.root;
  if (store instanceof S3Store) return store.url;
  return 'the trajectory store';
}

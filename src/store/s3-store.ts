import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { StoreRef } from '../schema/rollout.js';
import { serialised, storeKey, type StoredEntry, type TrajectoryStore } from './trajectory-store.js';

/** Where an `s3://bucket/prefix` store keeps its entries, and how to address the server. */
export interface S3Location {
  bucket: string;
  /** Prepended to every key, without leading or trailing slash; empty for the bucket's root. */
  prefix: string;
  /** Path-style requests (`http://host/bucket/key`), which MinIO, SeaweedFS, VersityGW and other local servers need. */
  forcePathStyle: boolean;
}

type Sdk = typeof import('@aws-sdk/client-s3');

/** Region used when neither AWS_REGION nor the profile names one: S3-compatible servers mostly ignore it. */
const FALLBACK_REGION = 'us-east-1';

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

function flag(value: string, what: string): boolean {
  const v = value.trim().toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw new Error(`${what} must be 1 or 0 (true or false), not "${value}"`);
}

/**
 * Parses `s3://bucket/some/prefix[?path_style=1]`. Path style comes from the URL's `path_style`, else
 * `CLOTHO_S3_PATH_STYLE`, else is on when the endpoint (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL) is an IP address or
 * localhost, where the bucket cannot be a host name; the SDK resolves endpoint, region and credentials itself.
 */
export function parseS3Url(spec: string, env: NodeJS.ProcessEnv = process.env): S3Location {
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new Error(`--store ${spec}: not a URL (expected s3://bucket/prefix)`);
  }
  if (url.protocol !== 's3:') throw new Error(`--store ${spec}: expected an s3:// URL`);
  const bucket = url.hostname;
  if (!bucket) throw new Error(`--store ${spec}: no bucket (expected s3://bucket/prefix)`);
  if (url.username || url.password || url.port) {
    throw new Error(`--store ${spec}: credentials and endpoint come from the AWS environment variables or profile, not the URL`);
  }
  const prefix = decodeURIComponent(url.pathname).replace(/^\/+|\/+$/g, '');
  if (prefix !== '') storeKey(prefix);
  let forcePathStyle: boolean | undefined;
  for (const [name, value] of url.searchParams) {
    if (name !== 'path_style') throw new Error(`--store ${spec}: unknown parameter "${name}" (known: path_style)`);
    forcePathStyle = flag(value, `--store ${spec}: path_style`);
  }
  if (forcePathStyle === undefined && env.CLOTHO_S3_PATH_STYLE) forcePathStyle = flag(env.CLOTHO_S3_PATH_STYLE, 'CLOTHO_S3_PATH_STYLE');
  return { bucket, prefix, forcePathStyle: forcePathStyle ?? endpointNeedsPathStyle(env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL) };
}

function endpointNeedsPathStyle(endpoint: string | undefined): boolean {
  if (!endpoint) return false;
  try {
    const host = new URL(endpoint).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(':');
  } catch {
    return false;
  }
}

/** Errors of a missing object, as opposed to a missing bucket or a server that cannot answer. */
function isMissingKey(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || (e.$metadata?.httpStatusCode === 404 && e.name !== 'NoSuchBucket');
}

/**
 * A store in an S3 bucket (AWS or any S3-compatible server), through the official AWS SDK: one JSON object per key,
 * `<prefix>/<key>.json`, the same layout as a directory store. A PUT replaces an object whole, so a retried write
 * overwrites what its failed attempt wrote, as in the directory store. Errors are thrown as they come (after the
 * SDK's own few retries): an activity that meets one fails and is retried by its step's policy.
 */
export class S3Store implements TrajectoryStore {
  readonly location: S3Location;
  private readonly config: S3ClientConfig;
  /** Keys per DeleteObjects request (S3 takes at most 1,000). */
  private readonly deleteBatch: number;
  private client?: Promise<{ s3: S3Client; sdk: Sdk }>;

  constructor(location: S3Location, config: S3ClientConfig = {}, options: { deleteBatch?: number } = {}) {
    this.location = location;
    this.deleteBatch = Math.min(1000, options.deleteBatch ?? 1000);
    this.config = {
      forcePathStyle: location.forcePathStyle,
      // A dead server must fail the call, so that the activity's retry policy takes over, rather than hang it.
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
      ...config,
    };
  }

  /** `s3://bucket/prefix`, for messages. */
  get url(): string {
    return `s3://${this.location.bucket}/${this.location.prefix}`;
  }

  /**
   * The SDK client, made on first use (commands that never touch an S3 store never load the SDK) with the region the
   * SDK finds, or us-east-1 when it finds none.
   */
  private connect(): Promise<{ s3: S3Client; sdk: Sdk }> {
    this.client ??= (async () => {
      const sdk = await import('@aws-sdk/client-s3');
      const client = new sdk.S3Client(this.config);
      try {
        await client.config.region();
        return { s3: client, sdk };
      } catch {
        client.destroy();
        return { s3: new sdk.S3Client({ ...this.config, region: FALLBACK_REGION }), sdk };
      }
    })();
    return this.client;
  }

  private objectKey(key: string): string {
    storeKey(key);
    return `${this.location.prefix === '' ? '' : `${this.location.prefix}/`}${key}.json`;
  }

  async put(key: string, value: unknown): Promise<StoreRef> {
    const { s3, sdk } = await this.connect();
    await s3.send(
      new sdk.PutObjectCommand({
        Bucket: this.location.bucket,
        Key: this.objectKey(key),
        Body: serialised(value),
        ContentType: 'application/json',
      }),
    );
    return { key };
  }

  async get<T = unknown>(ref: StoreRef | string): Promise<T> {
    const key = typeof ref === 'string' ? ref : ref.key;
    const value = await this.tryGet<T>(key);
    if (value === undefined) throw new Error(`trajectory store has no entry "${key}" under ${this.url}`);
    return value;
  }

  async tryGet<T = unknown>(key: string): Promise<T | undefined> {
    const { s3, sdk } = await this.connect();
    try {
      const response = await s3.send(new sdk.GetObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key) }));
      return JSON.parse(await response.Body!.transformToString('utf8')) as T;
    } catch (error) {
      if (isMissingKey(error)) return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const { s3, sdk } = await this.connect();
    await s3.send(new sdk.DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key) }));
  }

  async deletePrefix(prefix: string): Promise<void> {
    const { s3, sdk } = await this.connect();
    let keys: string[] = [];
    const flush = async () => {
      if (keys.length === 0) return;
      const objects = keys.map((Key) => ({ Key }));
      keys = [];
      const response = await s3.send(
        new sdk.DeleteObjectsCommand({ Bucket: this.location.bucket, Delete: { Objects: objects, Quiet: true } }),
      );
      const failed = response.Errors ?? [];
      if (failed.length > 0) {
        throw new Error(
          `could not delete ${failed.length} objects under ${this.url}: ${failed[0]!.Key}: ${failed[0]!.Code} ${failed[0]!.Message ?? ''}`,
        );
      }
    };
    for await (const object of this.objects(prefix)) {
      keys.push(object.Key);
      if (keys.length === this.deleteBatch) await flush();
    }
    await flush();
  }

  async *list(prefix: string): AsyncIterable<StoredEntry> {
    const base = this.location.prefix === '' ? '' : `${this.location.prefix}/`;
    for await (const object of this.objects(prefix)) {
      yield { key: object.Key.slice(base.length, -'.json'.length), size: object.Size, modified: object.LastModified };
    }
  }

  /** The objects of the entries `prefix` and under `prefix/`, page by page. */
  private async *objects(prefix: string): AsyncIterable<{ Key: string; Size: number; LastModified: Date }> {
    const { s3, sdk } = await this.connect();
    const base = this.location.prefix === '' ? '' : `${this.location.prefix}/`;
    if (prefix !== '') storeKey(prefix);
    // A key prefix on whole segments: `item-1` must not match `item-10`.
    const within = prefix === '' ? base : `${base}${prefix}`;
    const matches = (key: string) => key.endsWith('.json') && (prefix === '' || key === `${within}.json` || key.startsWith(`${within}/`));
    let token: string | undefined;
    do {
      const page = await s3.send(new sdk.ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: within, ContinuationToken: token }));
      for (const object of page.Contents ?? []) {
        if (object.Key && matches(object.Key))
          yield { Key: object.Key, Size: object.Size ?? 0, LastModified: object.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Closes the SDK's connections. */
  async close(): Promise<void> {
    if (this.client) (await this.client).s3.destroy();
  }
}

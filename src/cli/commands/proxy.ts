import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { startApiServer } from '../../api/server.js';
import { decideListening, LISTENING_OPTIONS, listeningHelp, PROXY_FACE } from '../../config/listening.js';
import { ServerConfigSchema, SERVER_TYPES, type ServerConfig } from '../../config/schemas.js';
import { createManagedProxy } from '../../api/managed-proxy.js';
import { loadTokenizer } from '../../inference/tokenizer.js';
import { untilInterrupted } from '../interrupt.js';

/**
 * The proxy's config file, as Atropos's `managed_server_proxy --config servers.json` reads it:
 * `{"model_name", "tokenizer_name"?, "servers": [{"base_url", "server_type" (default vllm), "api_key", ...}]}`.
 */
export const ProxyConfigSchema = z.looseObject({
  model_name: z.string().min(1),
  /** @default model_name */
  tokenizer_name: z.string().min(1).optional(),
  servers: z
    .array(
      z.looseObject({
        base_url: z.string().min(1),
        server_type: z.enum(SERVER_TYPES).default('vllm'),
        api_key: z.string().default(''),
        num_max_requests_at_once: z.number().int().positive().default(512),
        num_requests_for_eval: z.number().int().positive().default(64),
        timeout: z.number().positive().default(1200),
      }),
    )
    .min(1),
});
export type ProxyConfig = z.input<typeof ProxyConfigSchema>;

/** The servers of a proxy config, each with the config's model and tokenizer. */
export function proxyServers(config: ProxyConfig): { servers: ServerConfig[]; modelName: string; tokenizerName: string } {
  const c = ProxyConfigSchema.parse(config);
  const tokenizerName = c.tokenizer_name ?? c.model_name;
  const servers = c.servers.map((s) =>
    ServerConfigSchema.parse({
      base_url: s.base_url,
      server_type: s.server_type,
      api_key: s.api_key,
      model_name: c.model_name,
      tokenizer_name: tokenizerName,
      num_max_requests_at_once: s.num_max_requests_at_once,
      num_requests_for_eval: s.num_requests_for_eval,
      timeout: s.timeout,
    }),
  );
  return { servers, modelName: c.model_name, tokenizerName };
}

/** A listening proxy. */
export interface RunningManagedProxy {
  /** `http://host:port`; a session's OpenAI base URL is `${url}/${uuid}/v1`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Loads the model's tokenizer (a Hub repo id, a directory, or an alias such as `qwen3`) and serves the proxy on
 * `host:port` (Atropos's default port 9100; 0 picks a free one) until `close()`; with `token`, every request but
 * `GET /health` needs it as a bearer token.
 */
export async function startManagedProxy(options: {
  config: ProxyConfig;
  host?: string;
  port?: number;
  token?: string;
}): Promise<RunningManagedProxy> {
  const { servers, modelName, tokenizerName } = proxyServers(options.config);
  const tokenizer = await loadTokenizer(tokenizerName);
  const proxy = createManagedProxy({ servers, modelName, tokenizer, ...(options.token === undefined ? {} : { token: options.token }) });
  try {
    const server = await startApiServer({ app: proxy.app, host: options.host ?? '127.0.0.1', port: options.port ?? 9100 });
    return {
      url: server.url,
      async close() {
        await server.close();
        proxy.close();
      },
    };
  } catch (error) {
    proxy.close();
    throw error;
  }
}

/** Usage of {@link proxyCommand}. */
export const PROXY_USAGE = `Usage: clotho proxy --config servers.json [--port 9100] [--host 127.0.0.1] [--token <secret>] [--trusted-network]

Atropos's ManagedServer OpenAI proxy: POST /sessions/create gives a session whose OpenAI base URL is
{proxy}/{uuid}/v1; GET /{uuid}/nodes returns each sequence's token ids, masks and logprobs. servers.json is
Atropos's format: {"model_name", "tokenizer_name"?, "servers": [{"base_url", "server_type": "vllm", "api_key"}]}.

  --port <n>           port (default 9100; 0 picks a free one)
${listeningHelp(PROXY_FACE)}
                       (atroposlib's ProxyManagedServer sends none)`;

/** `clotho proxy`: serves the proxy until SIGINT or SIGTERM. Returns the exit code (2: bad flags or config). */
export async function proxyCommand(
  args: string[],
  io: { out(line: string): void; err(line: string): void },
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  let flags: { config: string; port: number; host: string; token?: string; trustedNetwork: boolean };
  let config: ProxyConfig;
  try {
    const { values } = parseArgs({
      args,
      options: { ...LISTENING_OPTIONS, config: { type: 'string' }, port: { type: 'string' } },
      strict: true,
    });
    if (!values.config) throw new Error('--config is required');
    if (values.token === '') throw new Error('--token: expected a secret, got an empty string');
    flags = {
      config: values.config,
      port: Number(values.port ?? 9100),
      host: values.host ?? '127.0.0.1',
      ...(values.token === undefined ? {} : { token: values.token }),
      trustedNetwork: values['trusted-network'] ?? false,
    };
    if (!Number.isInteger(flags.port) || flags.port < 0 || flags.port > 65535)
      throw new Error(`--port: expected a port number, got ${values.port}`);
    const parsed = ProxyConfigSchema.safeParse(JSON.parse(await readFile(flags.config, 'utf8')));
    if (!parsed.success) throw new Error(`${flags.config}: ${z.prettifyError(parsed.error)}`);
    config = parsed.data;
  } catch (error) {
    io.err(error instanceof Error ? error.message : String(error));
    io.err(PROXY_USAGE);
    return 2;
  }
  const listening = decideListening(PROXY_FACE, flags, env);
  if (!listening.ok) {
    io.err(listening.error);
    return 2;
  }
  if (listening.warning) io.err(listening.warning);
  const { token } = listening;
  const running = await startManagedProxy({ config, host: flags.host, port: flags.port, ...(token === undefined ? {} : { token }) });
  const guarded = token === undefined ? '' : '; bearer token required';
  io.out(
    `clotho proxy listening on ${running.url} for ${config.model_name} (${config.servers.length} server(s)${guarded}); Ctrl-C to stop`,
  );
  await untilInterrupted();
  await running.close();
  return 0;
}

import { merge, isObject } from './merge.js';
import { check, type Origins } from './origins.js';
import { ServerConfigSchema, type ServerConfig } from './schemas.js';

/** One list of servers from YAML (a mapping or a list) and `--<ns>.*` flags; flags may not override a multi-server list. */
export function servers(
  ns: 'openai' | 'teacher' | 'judge',
  fromYaml: unknown,
  flags: Record<string, unknown>,
  origins: Origins,
  problems: string[],
): ServerConfig[] {
  const hasFlags = Object.keys(flags).length > 0;
  const isList = Array.isArray(fromYaml);
  const list: unknown[] = isList ? fromYaml : fromYaml != null ? [fromYaml] : ns === 'openai' || hasFlags ? [{}] : [];
  if (list.length >= 2 && hasFlags) {
    problems.push(
      `--${ns}.${Object.keys(flags)[0]}: cannot override a list of ${list.length} ${ns} servers from the YAML file; edit the file`,
    );
    return [];
  }
  return list.flatMap((item, i) => {
    const at = isList ? `${ns}.${i}` : ns;
    if (!isObject(item)) {
      problems.push(`${origins.get(at)?.label ?? ns}: expected a server mapping`);
      return [];
    }
    if (isList) for (const k of Object.keys(flags)) origins.set(`${at}.${k}`, origins.get(`${ns}.${k}`)!);
    const parsed = check(ServerConfigSchema, merge(item, flags), at, ServerConfigSchema.shape, origins, problems);
    return parsed ? [parsed] : [];
  });
}

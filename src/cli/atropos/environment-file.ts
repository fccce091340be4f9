import { stat } from 'node:fs/promises';
import { ConfigError } from '../../config/config-error.js';

/**
 * The file of `--atropos path/to/env.py[:ClassName]`, read as the worker reads the spec (the part after the last
 * colon is a class when it is an identifier). Checked before anything starts, so a wrong path is one line at once.
 * @throws ConfigError naming the spec and the file when there is no such file.
 */
export async function atroposEnvironmentFile(spec: string): Promise<string> {
  const colon = spec.lastIndexOf(':');
  const file = colon > 0 && /^[A-Za-z_]\w*$/.test(spec.slice(colon + 1)) ? spec.slice(0, colon) : spec;
  const found = await stat(file).catch(() => undefined);
  if (!found) throw new ConfigError([`--atropos ${spec}: no such file ${file}`]);
  if (!found.isFile()) throw new ConfigError([`--atropos ${spec}: ${file} is not a file`]);
  return file;
}

/** The worker's lines to the user, under the command's name rather than the worker's (`clotho-atropos: …`). */
export const asCommandLines = (output: string, command: string): string => output.replace(/^clotho-atropos: /gm, `clotho ${command}: `);

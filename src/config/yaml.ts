import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { isObject } from './merge.js';
import { record, type Origins } from './origins.js';
import { didYouMean } from './suggest.js';

type YamlError = Error & { linePos?: { line: number; col: number }[] };

/** A YAML parse error as one message: what is wrong, where, and the offending line itself. */
function yamlProblem(error: YamlError, file: string): string {
  const first = error.message.split('\n')[0]!;
  const at = error.linePos?.[0];
  if (!at) return first;
  const line = readFileSync(file, 'utf8').split('\n')[at.line - 1] ?? '';
  return `${first}\n    ${at.line} | ${line}\n    ${' '.repeat(String(at.line).length)} | ${' '.repeat(Math.max(0, at.col - 1))}^`;
}

/** Reads the YAML file (`--config`) into its sections, recording where each value came from. */
export function readYaml(file: string, origins: Origins, problems: string[]): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8')) ?? {};
  } catch (error) {
    problems.push(`--config ${file}: ${yamlProblem(error as YamlError, file)}`);
    return {};
  }
  if (!isObject(doc)) {
    problems.push(`${file}: expected a mapping with env:, openai:, teacher:, steps:`);
    return {};
  }
  const sections = ['env', 'openai', 'teacher', 'judge', 'steps'];
  for (const [key, value] of Object.entries(doc)) {
    if (!sections.includes(key)) problems.push(`${file}: ${key}: unknown section${didYouMean(key, sections)}`);
    else record(origins, value, [key], (shown) => `${file}: ${shown}`);
  }
  return doc;
}

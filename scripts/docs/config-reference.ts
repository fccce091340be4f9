import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describeFlags, type FlagRow } from '../../src/config/help.js';
import type { AnyEnvironment } from '../../src/env/define.js';
import { builtInEnvironments, loadEnvironment } from '../../src/cli/registry.js';
import { repoRoot } from '../../src/store/paths.js';
import { markdownText, vPre, writePage } from './pages.js';

/** An environment with no fields of its own: its flags are the ones every environment has. */
const bare = { name: 'any', description: 'any environment', config: {} } as unknown as AnyEnvironment;

const cell = (text: string) => (text === '' ? '' : markdownText(text));
const table = (rows: FlagRow[]) => [
  '| flag | type | default | what it is |',
  '| --- | --- | --- | --- |',
  ...rows.map((r) => `| \`${r.flag}\` | ${cell(r.type)} | ${r.default === '' ? '' : `\`${r.default.replace(/\|/g, '\\|')}\``} | ${cell(r.description)} |`),
];

/**
 * docs/reference/config.md: every flag and YAML field of a run, from the schemas' `.describe()` (what `--help`
 * prints), then each built-in environment's own `--env.*` fields. Returns the number of pages.
 */
export async function writeConfigReference(): Promise<number> {
  const common = describeFlags(bare);
  const known = new Set(common.map((r) => r.flag));
  const section = (prefix: string) => common.filter((r) => r.flag.startsWith(prefix));
  const lines = [
    '# Config fields',
    '',
    'Generated from the schemas’ `.describe()`: the same words as `clotho process <environment> --help`. Every field is a',
    'flag (`--env.group_size 8`) and a YAML key under its section (`env:`, `openai:` — a list for several servers —,',
    '`teacher:`, `judge:`, `steps:`) of the file given with `--config`; flags win over the YAML, the YAML over the',
    'defaults. A wrong flag is an error that names it and says what it expected. The run records its `--env.*` fields: a',
    'later command of the same run (a resumed `process`, `clotho worker` on any host) takes them, and one that sets a',
    'field to another value is refused, naming both values. See [Atropos compatibility](./atropos-compatibility) for how',
    'Atropos’s own fields map onto Clotho’s.',
    '',
    '## Every environment: `--env.*`',
    '',
    ...table(section('--env.')),
    '',
    '## Inference servers: `--openai.*` (and `--teacher.*`, `--judge.*`)',
    '',
    ...table([...section('--openai.'), ...section('--teacher.'), ...section('--judge.')]),
    '',
    '## Step policies: `--steps.<step>.*`',
    '',
    ...table(section('--steps.')),
    '',
    '## Each built-in environment’s own fields',
    '',
  ];
  for (const name of builtInEnvironments()) {
    const environment = await loadEnvironment(name);
    const own = describeFlags(environment).filter((r) => !known.has(r.flag));
    lines.push(`### ${name}`, '', markdownText(environment.description.trim().split('\n')[0]!), '');
    lines.push(...(own.length > 0 ? table(own) : ['No fields of its own.']), '');
    const page = existsSync(join(repoRoot, 'environments', name, 'README.md')) ? name : '';
    lines.push(`Its page: [${name}](../environments/${page}).`, '');
  }
  await writePage('reference/config.md', vPre(lines.join('\n')));
  return 1;
}

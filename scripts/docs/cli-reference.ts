import { main } from '../../src/cli/main.js';
import { clean, markdownText, textBlock, writePage } from './pages.js';

/** What `clotho <argv>` prints, run in this process (the same functions the command line runs). */
export async function helpOf(argv: string[]): Promise<string> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (line) => out.push(line), err: (line) => err.push(line) });
  if (code !== 0) throw new Error(`clotho ${argv.join(' ')} exited ${code}: ${err.join('\n')}`);
  return out.join('\n');
}

/** The commands `clotho --help` lists, with their one-line summaries. */
export function commandsOf(usage: string): { name: string; summary: string }[] {
  const section = usage.slice(usage.indexOf('Commands:\n') + 'Commands:\n'.length).split('\n\n')[0]!;
  return section.split('\n').map((line) => {
    const [, name, summary] = /^ {2}(\S+)\s+(.*)$/.exec(line) ?? [];
    if (!name) throw new Error(`not a command line of clotho --help: ${line}`);
    return { name, summary: summary! };
  });
}

/** docs/reference/cli/: `clotho --help` and each command's `--help`, one page each. Returns the number of pages. */
export async function writeCliReference(): Promise<number> {
  await clean('reference/cli');
  const usage = await helpOf(['--help']);
  const commands = commandsOf(usage);
  const table = ['| command | what it does |', '| --- | --- |', ...commands.map((c) => `| [\`clotho ${c.name}\`](./${c.name}) | ${markdownText(c.summary)} |`)];
  await writePage(
    'reference/cli/index.md',
    [
      '# The `clotho` command',
      '',
      'Generated from the commands’ own help text: what `clotho --help` and `clotho <command> --help` print.',
      '',
      ...table,
      '',
      '## `clotho --help`',
      '',
      textBlock(usage),
    ].join('\n'),
  );
  for (const { name, summary } of commands) {
    const help = await helpOf([name, '--help']);
    await writePage(`reference/cli/${name}.md`, [`# \`clotho ${name}\``, '', markdownText(summary), '', textBlock(help)].join('\n'));
  }
  return commands.length + 1;
}

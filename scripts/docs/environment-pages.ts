import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { listEnvironments } from '../../src/cli/commands/list.js';
import { repoRoot } from '../../src/store/paths.js';
import { clean, markdownText, vPre, writePage } from './pages.js';

/**
 * A README's links, for the site: one to another page of the repository that the site has becomes a link to that
 * page; one to a file of the environment's folder (its data, a YAML) names the file in the repository instead, since
 * the site does not serve it.
 */
export function siteLinks(readme: string, folder: string): string {
  return readme.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (link, text: string, target: string) => {
    if (/^[a-z]+:/.test(target) || target.startsWith('#')) return link;
    const [path, anchor] = target.split('#');
    const inRepository = join('environments', folder, path!);
    const page = sitePage(inRepository);
    if (page !== undefined) return `[${text}](${page}${anchor ? `#${anchor}` : ''})`;
    return `${text} (\`${inRepository}\` in the repository)`;
  });
}

/** The site's page for a Markdown file of the repository: the site's own (docs/), or an environment's README. */
function sitePage(path: string): string | undefined {
  if (path.startsWith('docs/') && path.endsWith('.md')) return `/${path.slice('docs/'.length, -'.md'.length)}`;
  const readme = /^environments\/([^/]+)\/README\.md$/.exec(path);
  if (readme) return `/environments/${readme[1]}`;
  if (path === 'ARCHITECTURE.md') return '/architecture';
  return undefined;
}

/** The folders under environments/ that have a README: one page each. */
async function readmeFolders(): Promise<string[]> {
  const folders = await readdir(join(repoRoot, 'environments'), { withFileTypes: true });
  return folders.filter((f) => f.isDirectory() && existsSync(join(repoRoot, 'environments', f.name, 'README.md'))).map((f) => f.name);
}

/**
 * docs/environments/: an index of the built-in environments, each linked to the README of its folder (the games of
 * `games/` share one), and a page per README. Returns the number of pages.
 */
export async function writeEnvironmentPages(): Promise<number> {
  await clean('environments');
  const folders = await readmeFolders();
  const readmes = Object.fromEntries(
    await Promise.all(folders.map(async (f) => [f, await readFile(join(repoRoot, 'environments', f, 'README.md'), 'utf8')] as const)),
  );
  const pageOf = (name: string) => (name in readmes ? name : folders.find((f) => readmes[f]!.includes(`\`${name}\``)));
  const rows = (await listEnvironments()).map((e) => {
    const page = pageOf(e.name);
    const title = page === undefined ? `\`${e.name}\`` : `[\`${e.name}\`](./${page})`;
    return `| ${title} | ${markdownText(e.description ?? `(failed to load: ${e.error})`)} |`;
  });
  await writePage(
    'environments/index.md',
    [
      '# Built-in environments',
      '',
      'Each is a folder under `environments/` with an `index.ts` that imports only `clotho`: copy one to start your',
      'own. `clotho list` prints this list; `clotho process <name> --help` an environment’s flags. The pages below are',
      'the folders’ READMEs.',
      '',
      '| name | what it does |',
      '| --- | --- |',
      ...rows,
    ].join('\n'),
  );
  for (const folder of folders) await writePage(`environments/${folder}.md`, vPre(siteLinks(readmes[folder]!, folder)));
  return folders.length + 1;
}

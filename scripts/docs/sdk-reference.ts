import { readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { Application, TSConfigReader } from 'typedoc';
import { repoRoot } from '../../src/store/paths.js';
import { clean, writePage } from './pages.js';

/**
 * The topics of the SDK reference, by the module an export of src/index.ts comes from: each topic is one page. A
 * module that no topic names fails the build, so a new part of the SDK is given a page rather than left out.
 */
export const SDK_TOPICS: { page: string; title: string; summary: string; modules: string[] }[] = [
  {
    page: 'environments',
    title: 'Defining an environment',
    summary: '`defineEnvironment` and what each part of a definition receives and returns.',
    modules: ['./env/define.js', './config/schemas.js', './schema/scored-data.js', './config/config-error.js', './env/problems.js', 'zod'],
  },
  { page: 'data', title: 'Data', summary: 'Items from files, tables and data sets; seeded generators.', modules: ['./env/datasets.js', './env/tables.js', './env/random.js'] },
  { page: 'tools', title: 'Tools and MCP', summary: 'Tools the model calls, their errors, and the tools of MCP servers.', modules: ['./env/tools.js', './env/mcp.js'] },
  {
    page: 'answers-and-rewards',
    title: 'Answers and rewards',
    summary: 'Reading answers out of completions; reward functions and length penalties.',
    modules: ['./env/answers.js', './env/math-answer.js', './env/rewards.js', './env/length-penalty.js'],
  },
  { page: 'testing', title: 'Testing an environment', summary: 'Playing an episode against scripted replies, in process.', modules: ['./env/testing.js', './env/episode.js'] },
  {
    page: 'harness',
    title: 'Harnesses and the sandbox',
    summary: 'Agent programs as harnesses, and running code in the bubblewrap sandbox.',
    modules: ['./env/harness.js', './kits/sandbox/sandbox.js', './kits/sandbox/agents.js'],
  },
  { page: 'games', title: 'Games', summary: '`defineGame` and reading moves from replies.', modules: ['./kits/games/moves.js', './kits/games/game.js'] },
  { page: 'judging', title: 'Judging', summary: 'Pairwise judge prompts and tallies (RLAIF).', modules: ['./kits/judging/pairwise.js'] },
  { page: 'images', title: 'Images', summary: 'Image parts of messages, and PNG.', modules: ['./kits/images/images.js', './kits/images/png.js'] },
];

/** The names src/index.ts exports, by the module each comes from, read from its export declarations. */
export async function exportsByModule(): Promise<Map<string, { name: string; type: boolean }[]>> {
  const file = join(repoRoot, 'src', 'index.ts');
  const source = ts.createSourceFile(file, await readFile(file, 'utf8'), ts.ScriptTarget.ES2022);
  const byModule = new Map<string, { name: string; type: boolean }[]>();
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement) || !statement.moduleSpecifier || !statement.exportClause) continue;
    if (!ts.isNamedExports(statement.exportClause)) continue;
    const module = (statement.moduleSpecifier as ts.StringLiteral).text;
    const names = statement.exportClause.elements.map((e) => ({ name: e.name.text, type: statement.isTypeOnly || e.isTypeOnly }));
    byModule.set(module, [...(byModule.get(module) ?? []), ...names]);
  }
  return byModule;
}

/**
 * docs/reference/sdk/: one page per topic, by TypeDoc from the doc comments, through an entry file per topic that
 * re-exports its names from src/index.ts. Returns the number of pages.
 */
export async function writeSdkReference(docs: string): Promise<number> {
  const byModule = await exportsByModule();
  const unplaced = [...byModule.keys()].filter((m) => !SDK_TOPICS.some((t) => t.modules.includes(m)));
  if (unplaced.length > 0) throw new Error(`src/index.ts exports from ${unplaced.join(', ')}, which no topic of scripts/docs/sdk-reference.ts names`);
  await clean('.generated/sdk');
  await clean('reference/sdk');
  const entries: string[] = [];
  for (const topic of SDK_TOPICS) {
    const names = topic.modules.flatMap((m) => byModule.get(m) ?? []);
    const entry = join(docs, '.generated', 'sdk', `${topic.page}.ts`);
    const from = relative(join(docs, '.generated', 'sdk'), join(repoRoot, 'src', 'index.js'));
    const list = names.map((n) => (n.type ? `type ${n.name}` : n.name)).join(', ');
    await writePage(relative(docs, entry), `/**\n * ${topic.summary}\n * @module ${topic.page}\n */\nexport { ${list} } from '${from}';`);
    entries.push(entry);
  }
  await writePage(
    '.generated/sdk/tsconfig.json',
    JSON.stringify({
      extends: relative(join(docs, '.generated', 'sdk'), join(repoRoot, 'tsconfig.json')),
      files: SDK_TOPICS.map((t) => `${t.page}.ts`),
      include: [],
    }),
  );
  const app = await Application.bootstrapWithPlugins({
    entryPoints: entries,
    tsconfig: join(docs, '.generated', 'sdk', 'tsconfig.json'),
    plugin: ['typedoc-plugin-markdown'],
    out: join(docs, 'reference', 'sdk'),
    router: 'module',
    readme: 'none',
    entryFileName: 'index.md',
    excludePrivate: true,
    excludeInternal: true,
    excludeExternals: true,
    disableSources: true,
    hidePageHeader: true,
    hideBreadcrumbs: true,
    // TypeDoc's links name its own anchors (`#game_config` for GAME_CONFIG, `#gameconfig-1` for a second GameConfig),
    // not the ids VitePress makes of the headings (`game-config`): each heading carries TypeDoc's as an HTML anchor.
    useHTMLAnchors: true,
    validation: { notExported: false, notDocumented: false, invalidLink: false },
    logLevel: 'Warn',
    // tsc checks the sources (npm run lint); TypeDoc only reads them.
    skipErrorChecking: true,
    // Not typedoc.json's options (the lint's check of the doc comments on src/index.ts): this build's own only.
  } as Parameters<typeof Application.bootstrapWithPlugins>[0], [new TSConfigReader()]);
  const project = await app.convert();
  if (!project) throw new Error('TypeDoc could not convert the SDK (see above)');
  await app.generateOutputs(project);
  // TypeDoc titles a page by its module's name (the file's); the site titles it by its topic.
  for (const topic of SDK_TOPICS) {
    const page = join(docs, 'reference', 'sdk', `${topic.page}.md`);
    await writeFile(page, (await readFile(page, 'utf8')).replace(/^# .*$/m, `# ${topic.title}`));
  }
  const titles = SDK_TOPICS.map((t) => `| [${t.title}](./${t.page}) | ${t.summary} |`);
  await writePage(
    'reference/sdk/index.md',
    [
      '# The SDK: `clotho`',
      '',
      'Everything an environment imports, `import { defineEnvironment, z } from \'clotho\'`, with its doc comment, by',
      'TypeDoc. One page per topic:',
      '',
      '| topic | what it holds |',
      '| --- | --- |',
      ...titles,
    ].join('\n'),
  );
  return SDK_TOPICS.length + 1;
}

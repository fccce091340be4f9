// The path a command line takes from `clotho process` to the env-run's input (issue 23's figure): the src files it
// passes through, and how often it climbs back up the layers. Run from the repository root:
//
//   node --conditions=clotho-source --import tsx scripts/config-path.mjs [--trace]
//
// What it measures: `processCommand` (src/cli/commands/process.ts) hands argv to `planRun(argv, PROCESS_PLAN)` and
// builds the workflow input with `envRunSettings(plan, …)`. Those two calls run three times for one command line: once
// to load every module, once under V8's precise coverage (the files: those with a function that ran, plus process.ts
// itself, counted with their folders: src/cli, src/config, …), and once with a non-pausing breakpoint on the entry of
// each of those functions, which gives the order in which they were entered. A climb is an entry into a file of a
// higher layer (.dependency-cruiser.cjs) than the file of the entry before it: the path going back up after a call
// down returned. `--trace` prints that sequence, file by file.
import inspector from 'node:inspector/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = process.cwd();
const rootUrl = pathToFileURL(root).href + '/';
const store = mkdtempSync(join(tmpdir(), 'clotho-config-path-'));
const argv = ['gsm8k', '--env.total_steps', '4', '--env.group_size', '8', '--store', store];
const handler = 'src/cli/commands/process.ts';

const { planRun, envRunSettings } = await import(`${rootUrl}src/cli/run.ts`);
const { PROCESS_PLAN } = await import(`${rootUrl}${handler}`);
const path = async () => envRunSettings(await planRun(argv, PROCESS_PLAN), false);

// Layer ranks from the layer rules: a layer's rank is the number of layers it may import besides itself.
const { forbidden } = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs'));
const layerRules = forbidden.filter((rule) => rule.name.startsWith('layer-'));
const layers = [...layerRules.map((rule) => rule.name.slice('layer-'.length)), 'cli'];
const sample = (layer) => `src/${layer}/x.ts`;
const rank = Object.fromEntries(
  layers.map((layer) => {
    const rule = layerRules.find((r) => r.name === `layer-${layer}`);
    const above = rule ? layers.filter((l) => l !== layer && new RegExp(rule.to.path).test(sample(l))).length : 0;
    return [layer, layers.length - 1 - above];
  }),
);
const layerOf = (file) => {
  const rule = layerRules.find((r) => new RegExp(r.from.path).test(file));
  return rule ? rule.name.slice('layer-'.length) : file.startsWith('src/cli/') ? 'cli' : 'other';
};

const session = new inspector.Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Debugger.enable');
await path();

await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
await path();
const { result } = await session.post('Profiler.takePreciseCoverage');
await session.post('Profiler.stopPreciseCoverage');
const ours = result.filter((script) => /^(src|environments)\//.test(script.url.slice(rootUrl.length)) && script.url.startsWith(rootUrl));
// A module's body (the function at offset 0) ran when it loaded, not on the path.
const ran = ours.flatMap((script) =>
  script.functions
    .filter((f) => f.ranges[0].count > 0 && f.ranges[0].startOffset > 0)
    .map((f) => ({ scriptId: script.scriptId, file: script.url.slice(rootUrl.length), start: f.ranges[0].startOffset })),
);
const files = [...new Set([handler, ...ran.map((f) => f.file)])].sort();

const entries = [];
globalThis.__configPathEntry = (i) => entries.push(i);
const sources = new Map();
for (const [i, fn] of ran.entries()) {
  if (!sources.has(fn.scriptId))
    sources.set(fn.scriptId, (await session.post('Debugger.getScriptSource', { scriptId: fn.scriptId })).scriptSource);
  const before = sources.get(fn.scriptId).slice(0, fn.start).split('\n');
  const start = { scriptId: fn.scriptId, lineNumber: before.length - 1, columnNumber: before.at(-1).length };
  const { locations } = await session.post('Debugger.getPossibleBreakpoints', { start, restrictToFunction: true });
  if (locations.length === 0) continue;
  await session.post('Debugger.setBreakpoint', { location: locations[0], condition: `(globalThis.__configPathEntry(${i}), false)` });
}
await path();
session.disconnect();
rmSync(store, { recursive: true, force: true });

const sequence = entries.map((i) => ran[i].file).filter((file, i, all) => i === 0 || file !== all[i - 1]);
let climbs = 0;
for (const [i, file] of sequence.entries()) {
  const up = i > 0 && rank[layerOf(file)] > rank[layerOf(sequence[i - 1])];
  if (up) climbs++;
  if (process.argv.includes('--trace')) console.log(`${up ? '↑' : ' '} ${layerOf(file).padEnd(10)} ${file}`);
}
const folders = new Set(files.map((file) => file.split('/').slice(0, 2).join('/')));
console.log(
  `clotho ${['process', ...argv.slice(0, -2)].join(' ')}: ${files.length} files in ${folders.size} folders (${[...folders].join(', ')}), ` +
    `${climbs} climbs back up the layers`,
);
for (const file of files) console.log(`  ${layerOf(file).padEnd(10)} ${file}`);

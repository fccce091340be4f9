// Writes each Python worker's boundary schema (JSON Schema) from the zod schemas it is generated from, so that both
// sides of the boundary come from one source (src/schema/boundary.ts). Run from the repository root, after changing a
// boundary's zod schemas:
//
//   npm run boundary-schemas              # writes the files
//   npm run boundary-schemas -- --check   # exits 1, naming each stale file, when one differs (the suite runs it)
//
// `--root <dir>` reads and writes the files under another folder than the repository (the generator's own test).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';

/** Each boundary: the module and export of its contract, and the file its Python worker validates against. */
const BOUNDARIES = [
  { module: 'src/schema/atropos.ts', contract: 'ATROPOS_BOUNDARY', file: 'clients/python-atropos/src/clotho_atropos/boundary.schema.json' },
];

const { values } = parseArgs({ options: { check: { type: 'boolean', default: false }, root: { type: 'string', default: process.cwd() } } });
const { boundaryJsonText } = await import(join(process.cwd(), 'src/schema/boundary.ts'));

let stale = 0;
for (const boundary of BOUNDARIES) {
  const text = boundaryJsonText((await import(join(process.cwd(), boundary.module)))[boundary.contract]);
  const path = join(values.root, boundary.file);
  const current = await readFile(path, 'utf8').catch(() => null);
  if (current === text) continue;
  if (values.check) {
    console.error(`${boundary.file} is stale: it is not what ${boundary.module} generates. Run \`npm run boundary-schemas\`.`);
    stale++;
  } else {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, text);
    console.log(`wrote ${boundary.file}`);
  }
}
process.exitCode = stale > 0 ? 1 : 0;

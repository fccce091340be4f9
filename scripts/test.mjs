// The whole test suite: the linters (`npm run lint`: ESLint, dependency-cruiser's layer rules, tsc), vitest
// (TypeScript) and pytest (the Python trainer client and the Atropos worker), then one closing line with the totals,
// so that a run reads as passed or failed at a glance (and CI can count it). A lint failure counts as one failed
// test; the tests run anyway. With arguments (a subset of the tests, passed to vitest) neither the linters nor pytest
// run.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';

const results = '.clotho/test-results';
rmSync(results, { recursive: true, force: true });
mkdirSync(results, { recursive: true });
const passThrough = process.argv.slice(2);

/** Runs `command` with the output inherited; resolves to its exit status (never rejects: a failed step is reported by it). */
const step = (command, args) => new Promise((resolve) => spawn(command, args, { stdio: 'inherit' }).on('close', (code) => resolve(code)));

// What the tests need from outside is prepared beside the linters (on a fresh machine: minutes of downloads and a Go
// build that would otherwise wait for tsc), and before vitest starts. None of it is fatal here: a test that needs a
// missing piece fails (or skips) saying why.
const preparation = Promise.all([
  // The Python workers' venvs (Atropos's, about 90 s the first time; verifiers', about 4 minutes), not inside the first
  // test file that needs one (where two files at once would install it twice while the other tests wait). A subset of
  // the tests installs what it needs itself.
  ...(passThrough.length > 0
    ? []
    : [
        ['atropos', 'ensureAtroposPython'],
        ['verifiers', 'ensureVerifiersPython'],
      ].map(([kind, ensure]) =>
        step(process.execPath, [
          '--conditions=clotho-source',
          '--import',
          'tsx',
          '-e',
          `const { ${ensure} } = await import('./src/cli/${kind}/python.ts');
          await ${ensure}((line) => console.log('ensure-${kind}-python: ' + line));`,
        ]),
      )),
  // bubblewrap for the code-execution sandbox, then Debian's Chromium for the viewer's browser test (playwright's own
  // download does not work offline): one after the other, as both may run apt-get, which holds dpkg's lock.
  step(process.execPath, ['scripts/ensure-sandbox.mjs']).then(() => step(process.execPath, ['scripts/ensure-chromium.mjs'])),
  // VersityGW for the S3 trajectory store's tests, built once with Go (a few minutes on a fresh machine); when the Go
  // module proxy cannot be reached they skip, saying so.
  step(process.execPath, ['scripts/ensure-s3-server.mjs']),
]);

const lint = passThrough.length > 0 ? null : await step('npm', ['run', 'lint']);
if (lint !== null && lint !== 0) console.log('\nlint: FAILED (ESLint, dependency-cruiser or tsc: see above); running the tests anyway\n');
await preparation;
const vitest = spawnSync(
  'npx',
  ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${results}/vitest.json`, ...passThrough],
  {
    stdio: 'inherit',
  },
);
// Each Python package in its own venv, with its own report: the trainer client, the Atropos worker (atroposlib) and
// the verifiers worker (verifiers).
const pytests =
  passThrough.length > 0
    ? []
    : ['python-tests.sh', 'python-atropos-tests.sh', 'python-verifiers-tests.sh'].map((script, i) => ({
        report: `${results}/pytest-${i}.xml`,
        run: spawnSync('bash', [`scripts/${script}`, `--junitxml=${results}/pytest-${i}.xml`], { stdio: 'inherit' }),
      }));

const totals = { passed: 0, failed: 0, skipped: 0 };
try {
  const v = JSON.parse(readFileSync(`${results}/vitest.json`, 'utf8'));
  totals.passed += v.numPassedTests;
  totals.failed += v.numFailedTests;
  totals.skipped += v.numPendingTests + v.numTodoTests;
} catch {
  totals.failed += 1; // vitest wrote no report: it did not run to the end
}
for (const pytest of pytests) {
  try {
    const suite = readFileSync(pytest.report, 'utf8').match(/<testsuite\b[^>]*>/)?.[0] ?? '';
    const count = (name) => Number(suite.match(new RegExp(`\\b${name}="(\\d+)"`))?.[1] ?? 0);
    const failed = count('failures') + count('errors');
    totals.failed += failed;
    totals.skipped += count('skipped');
    totals.passed += count('tests') - failed - count('skipped');
  } catch {
    totals.failed += 1;
  }
}
if (lint !== null && lint !== 0) {
  totals.failed += 1;
  console.log('\nlint: FAILED (npm run lint), counted as one failed test');
}
console.log(`\ntests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exitCode = vitest.status !== 0 || pytests.some((p) => p.run.status !== 0) || totals.failed > 0 ? 1 : 0;

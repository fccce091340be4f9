#!/usr/bin/env node
// Makes sure a headless Chromium is there for the browser tests of `clotho view` (driven by playwright-core, whose own
// browser download does not work in every sandbox): Debian's `chromium` package, installed with apt-get when it is
// missing and we are root (CI and dev containers), then a trial run that prints its version.
// Usage: node scripts/ensure-chromium.mjs [--check]   (--check: report only, install nothing)
import { spawnSync } from 'node:child_process';

const checkOnly = process.argv.includes('--check');
const say = (line) => console.log(`ensure-chromium: ${line}`);
const fail = (line) => {
  console.error(`ensure-chromium: ${line}`);
  process.exit(1);
};

const run = (command, args, options = {}) => spawnSync(command, args, { encoding: 'utf8', ...options });
const version = () => run('chromium', ['--headless', '--no-sandbox', '--version']);
const hasChromium = () => version().status === 0;

if (!hasChromium()) {
  if (checkOnly) fail('chromium is not installed (apt-get install chromium, or run this script without --check as root)');
  if (process.getuid?.() !== 0) fail('chromium is not installed and this is not root: install the Debian/Ubuntu package "chromium"');
  if (run('apt-get', ['--version']).status !== 0)
    fail('chromium is not installed and there is no apt-get: install chromium with your package manager');
  say('installing chromium with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'chromium']]) {
    const result = run('apt-get', args, { stdio: 'inherit', env });
    if (result.status !== 0) fail(`apt-get ${args.join(' ')} failed (exit ${result.status})`);
  }
  if (!hasChromium()) fail('apt-get installed chromium but `chromium --version` still fails');
}
say(`${version().stdout.trim()} at ${run('sh', ['-c', 'command -v chromium']).stdout.trim()}`);

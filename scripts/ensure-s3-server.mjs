#!/usr/bin/env node
// Makes sure a real S3-compatible server is at hand for the tests of the S3 trajectory store: VersityGW (the Versity
// S3 Gateway, Apache-2.0), an S3 server over a directory, built once with `go install` from the Go module proxy into
// $CLOTHO_HOME/s3-server/ (about 2 minutes of CPU; later calls find it there). CLOTHO_S3_SERVER_PATH names a
// versitygw binary of your own instead.
//
// Usage: node scripts/ensure-s3-server.mjs [--json]
// Exit status: 0 ready (prints the binary's path), 3 the module proxy cannot be reached (the S3 tests skip),
// 1 anything else (no Go, a failed build: the S3 tests fail with this message).
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Pinned, so that every clone tests against the same server. */
export const VERSITYGW_MODULE = 'github.com/versity/versitygw';
export const VERSITYGW_VERSION = 'v1.8.0';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const home = process.env.CLOTHO_HOME ? resolve(process.env.CLOTHO_HOME) : join(repoRoot, '.clotho');
const installDir = join(home, 's3-server', `versitygw-${VERSITYGW_VERSION}`);
const installed = join(installDir, 'versitygw');
const lock = join(home, 's3-server', `.building-${VERSITYGW_VERSION}`);

const json = process.argv.includes('--json');
const report = (status, fields, code) => {
  if (json) console.log(JSON.stringify({ status, ...fields }));
  else console.log(`ensure-s3-server: ${fields.message ?? `${status}: ${fields.path}`}`);
  process.exit(code);
};
const ready = (path, extra = {}) => report('ready', { path, ...extra }, 0);
const unreachable = (message) => report('unreachable', { message }, 3);
const fail = (message) => report('failed', { message }, 1);

const executable = (path) => {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

// A network failure on the way to the module proxy, as `go` words it; anything else (403, a compile error) is a failure.
const NETWORK =
  /dial tcp|no such host|connection refused|i\/o timeout|TLS handshake timeout|network is unreachable|temporary failure in name resolution|connection reset by peer|server misbehaving|proxyconnect/i;

const explicit = process.env.CLOTHO_S3_SERVER_PATH;
if (explicit) {
  if (executable(explicit)) ready(resolve(explicit));
  fail(`CLOTHO_S3_SERVER_PATH=${explicit} is not an executable file`);
}
if (executable(installed)) ready(installed);

const go = process.env.GO || 'go';
if (spawnSync(go, ['version'], { encoding: 'utf8' }).status !== 0) {
  fail(
    `no Go toolchain ("${go} version" failed): install Go 1.25 or newer (https://go.dev/dl) so that ${VERSITYGW_MODULE}@${VERSITYGW_VERSION} ` +
      'can be built, or set CLOTHO_S3_SERVER_PATH to a versitygw binary',
  );
}

mkdirSync(dirname(lock), { recursive: true });
// One build at a time: another process building waits for it rather than building the same thing again.
const deadline = Date.now() + 30 * 60_000;
for (;;) {
  try {
    mkdirSync(lock);
    break;
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
  }
  if (executable(installed)) ready(installed);
  // A lock older than the longest build is left by a killed build.
  let age = 0;
  try {
    age = Date.now() - statSync(lock).mtimeMs;
  } catch {
    continue;
  }
  if (age > 20 * 60_000) rmSync(lock, { recursive: true, force: true });
  if (Date.now() > deadline) fail(`waited 30 minutes for another build of versitygw (${lock})`);
  await new Promise((r) => setTimeout(r, 1000));
}

const started = Date.now();
const building = join(dirname(lock), `bin-${process.pid}-${Math.random().toString(36).slice(2)}`);
// Reported only after the lock is released (process.exit skips `finally`).
let outcome;
try {
  outcome = executable(installed) ? { ready: installed } : await build();
} finally {
  rmSync(building, { recursive: true, force: true });
  rmSync(lock, { recursive: true, force: true });
}
if (outcome.ready) ready(outcome.ready, outcome.extra);
if (outcome.unreachable) unreachable(outcome.unreachable);
fail(outcome.failed);

async function build() {
  if (!json) console.log(`ensure-s3-server: building ${VERSITYGW_MODULE}@${VERSITYGW_VERSION} with ${go} install (once, a few minutes)`);
  const stderr = await new Promise((resolveBuild) => {
    const child = spawn(go, ['install', '-trimpath', '-ldflags=-s -w', `${VERSITYGW_MODULE}/cmd/versitygw@${VERSITYGW_VERSION}`], {
      // Outside the repository, so that no go.work or go.mod around it has a say.
      cwd: dirname(lock),
      env: { ...process.env, GOBIN: building, GOFLAGS: `${process.env.GOFLAGS ?? ''} -buildvcs=false`.trim() },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let text = '';
    child.stderr.on('data', (chunk) => (text += chunk));
    child.on('close', (code) => resolveBuild(code === 0 ? null : text || `exit ${code}`));
    child.on('error', (error) => resolveBuild(String(error)));
  });
  if (stderr !== null) {
    const tail = stderr.trim().split('\n').slice(-8).join('\n');
    if (NETWORK.test(stderr))
      return { unreachable: `the Go module proxy cannot be reached to build ${VERSITYGW_MODULE}@${VERSITYGW_VERSION}:\n${tail}` };
    return { failed: `go install ${VERSITYGW_MODULE}/cmd/versitygw@${VERSITYGW_VERSION} failed:\n${tail}` };
  }
  if (!existsSync(installDir)) renameSync(building, installDir);
  if (!executable(installed)) return { failed: `the build left no executable at ${installed}` };
  return { ready: installed, extra: { builtSeconds: Math.round((Date.now() - started) / 1000) } };
}

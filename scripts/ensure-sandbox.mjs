#!/usr/bin/env node
// Makes sure the code-execution sandbox can run: bubblewrap (`bwrap`) on the PATH, installed from Debian's packages
// when it is missing and we are root (CI and dev containers), then a trial run of an empty sandbox so that a kernel
// without user namespaces is reported here, with its cause, instead of as failing tests.
// Usage: node scripts/ensure-sandbox.mjs [--check]   (--check: report only, install nothing)
import { spawnSync } from 'node:child_process';

const checkOnly = process.argv.includes('--check');
const say = (line) => console.log(`ensure-sandbox: ${line}`);
const fail = (line) => {
  console.error(`ensure-sandbox: ${line}`);
  process.exit(1);
};

const run = (command, args, options = {}) => spawnSync(command, args, { encoding: 'utf8', ...options });
const hasBwrap = () => run('bwrap', ['--version']).status === 0;

if (!hasBwrap()) {
  if (checkOnly) fail('bwrap is not installed (apt-get install bubblewrap, or run this script without --check as root)');
  if (process.getuid?.() !== 0) fail('bwrap is not installed and this is not root: install the Debian/Ubuntu package "bubblewrap"');
  if (run('apt-get', ['--version']).status !== 0)
    fail('bwrap is not installed and there is no apt-get: install bubblewrap with your package manager');
  say('installing bubblewrap with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'bubblewrap']]) {
    const result = run('apt-get', args, { stdio: 'inherit', env });
    if (result.status !== 0) fail(`apt-get ${args.join(' ')} failed (exit ${result.status})`);
  }
  if (!hasBwrap()) fail('apt-get installed bubblewrap but bwrap is still not on the PATH');
}

// The same namespaces the sandbox asks for, as the same user (nobody when we are root, as src/kits/sandbox/sandbox.ts runs it);
// a failure here is the kernel or the container refusing them.
const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
const trial = run(
  'bwrap',
  [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--die-with-parent',
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    '1048576',
    '--tmpfs',
    '/sandbox',
    '--remount-ro',
    '/',
    '--',
    'prlimit',
    '--nproc=8',
    '--',
    'true',
  ],
  { ...asNobody, cwd: '/' },
);
if (trial.status !== 0) {
  fail(
    `bwrap is installed but cannot create a sandbox here: ${trial.stderr.trim() || `exit ${trial.status}`}\n` +
      '  It needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)\n' +
      '  or root; in Docker, run the container with --security-opt seccomp=unconfined or grant CAP_SYS_ADMIN.',
  );
}
say(`${run('bwrap', ['--version']).stdout.trim()} works`);

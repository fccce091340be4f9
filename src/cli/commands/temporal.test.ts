import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, isServerListening, pidFilePath } from '../../../temporal-dev/index.js';
import { waitFor } from '../../../test/support/cli.js';
import { temporalCommand } from './temporal.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-temporal-cmd-'));
});
afterAll(async () => {
  await temporalCommand(['stop', '--state-dir', dir], collector());
  await rm(dir, { recursive: true, force: true });
});

function collector() {
  const io = {
    stdout: [] as string[],
    stderr: [] as string[],
    out: (l: string) => io.stdout.push(l),
    err: (l: string) => io.stderr.push(l),
  };
  return io;
}

describe('clotho temporal', () => {
  it('prints usage for --help', async () => {
    const io = collector();
    expect(await temporalCommand(['--help'], io)).toBe(0);
    expect(io.stdout.join('\n')).toMatch(/Usage: clotho temporal <start\|stop\|status>/);
  });

  it.each([
    [['start', '--bogus'], /--bogus/],
    [['start', '--port', 'abc'], /--port: /],
    [['start', '--port', '70000'], /--port: /],
    [['status', '--port', '7300'], /--port applies to start only/],
    [['status', '--ui-port', '8300'], /--ui-port applies to start only/],
    [['start', '--ui-port', 'x'], /--ui-port: /],
    [['restart'], /unexpected "restart"/],
    [[], /missing command/],
  ])('rejects %j with exit code 2', async (args, message) => {
    const io = collector();
    expect(await temporalCommand(args, io)).toBe(2);
    expect(io.stderr.join('\n')).toMatch(message);
  });

  it('reports a failure with its cause and exit code 1', async () => {
    const notADir = join(dir, 'a-file');
    await writeFile(notADir, '');
    const io = collector();
    expect(await temporalCommand(['status', '--state-dir', notADir], io)).toBe(1);
    expect(io.stderr.join('\n')).toMatch(/clotho temporal status: .*ENOTDIR/);
  });

  it('reports a stale pid file as not running and stop leaves that process alone', async () => {
    const stateDir = join(dir, 'stale');
    await mkdir(stateDir, { recursive: true });
    // This test's own process: alive, but no Temporal server, so it must be neither reported nor signalled.
    const record = {
      pid: process.pid,
      address: '127.0.0.1:1',
      namespace: 'default',
      dbFilename: null,
      logFile: 'x',
      startedAt: new Date().toISOString(),
    };
    await writeFile(pidFilePath(stateDir), JSON.stringify(record));
    const status = collector();
    expect(await temporalCommand(['status', '--state-dir', stateDir], status)).toBe(1);
    expect(status.stdout.join('\n')).toMatch(/not running/);
    const stop = collector();
    expect(await temporalCommand(['stop', '--state-dir', stateDir], stop)).toBe(0);
    expect(stop.stdout.join('\n')).toMatch(/was not running/);
  });

  it('starts a detached server with its UI on the port asked, finds it again, reports it, and stops it', async () => {
    const port = await freePort();
    const uiPort = await freePort();
    const dbFile = join(dir, 'db', 'state.sqlite');
    const start = collector();
    const args = ['start', '--state-dir', dir, '--port', String(port), '--ui-port', String(uiPort), '--db-filename', dbFile];
    expect(await temporalCommand(args, start)).toBe(0);
    const printed = start.stdout.join('\n');
    expect(printed).toMatch(/started \(pid \d+\)/);
    expect(printed).toContain(`address: 127.0.0.1:${port}`);
    expect(printed).toContain(`UI:      http://127.0.0.1:${uiPort}`);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${uiPort}/`).catch(() => undefined))?.ok === true, 30_000, 'the UI');
    expect(await isServerListening(`127.0.0.1:${port}`)).toBe(true);

    const again = collector();
    expect(await temporalCommand(['start', '--state-dir', dir], again)).toBe(0);
    expect(again.stdout[0]).toBe(start.stdout[0]!.replace('started', 'already running'));

    const status = collector();
    expect(await temporalCommand(['status', '--state-dir', dir], status)).toBe(0);
    expect(status.stdout.join('\n')).toMatch(
      new RegExp(`running \\(pid \\d+\\)\\n  address:  127.0.0.1:${port}[\\s\\S]*database: ${dbFile}`),
    );

    const stop = collector();
    expect(await temporalCommand(['stop', '--state-dir', dir], stop)).toBe(0);
    expect(stop.stdout[0]).toMatch(/stopped \(pid \d+\)/);
    expect(await isServerListening(`127.0.0.1:${port}`, 500)).toBe(false);
    const after = collector();
    expect(await temporalCommand(['status', '--state-dir', dir], after)).toBe(1);
  });
});

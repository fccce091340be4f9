import { mkdtemp, readFile, readdir, readlink, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIsolatedDevServer, testConnection, uniqueId, uniqueTaskQueue } from '../test/support/temporal.js';
import { CLOTHO_SEARCH_ATTRIBUTES, listCustomSearchAttributes } from './search-attributes.js';
import { devServerArgs, ephemeralPorts, freePort, isServerListening, startDevServer } from './server.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-server-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Proto enum values of Clotho's attributes: Keyword 2, Int 3, Double 4. */
const EXPECTED_TYPES = new Map(
  Object.entries(CLOTHO_SEARCH_ATTRIBUTES).map(([name, type]) => [name, { Keyword: 2, Int: 3, Double: 4 }[type]]),
);

describe('freePort', () => {
  it('picks a bindable port below the kernel’s ephemeral range, where no connection or listen(0) takes it meanwhile', async () => {
    const { low } = await ephemeralPorts();
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(low);
    }
    const server = createServer();
    await new Promise<void>((done) => server.listen(ports[0], '127.0.0.1', done));
    await new Promise((done) => server.close(done));
  });
});

describe('devServerArgs', () => {
  it('binds to the given ip and ports, persists to the file, stays offline and registers the attributes', () => {
    const args = devServerArgs({ ip: '127.0.0.1', port: 7400, uiPort: 8400, headless: false, dbFilename: '/s/t.sqlite', namespace: 'ns' });
    const joined = args.join(' ');
    expect(args.slice(0, 2)).toEqual(['server', 'start-dev']);
    for (const part of [
      '--ip 127.0.0.1',
      '--port 7400',
      '--ui-port 8400',
      '--db-filename /s/t.sqlite',
      '--namespace ns',
      '--log-level warn',
      '--ui-disable-news-fetch',
      '--dynamic-config-value frontend.enableServerVersionCheck=false',
      '--search-attribute ClothoItemIndex=Int',
      '--search-attribute ClothoMeanScore=Double',
    ]) {
      expect(joined).toContain(part);
    }
    const inMemory = devServerArgs({ ip: '127.0.0.1', port: 7400, uiPort: 8400, headless: true, dbFilename: null, namespace: 'default' });
    expect(inMemory).not.toContain('--db-filename');
    expect(inMemory).toContain('--headless');
    expect(inMemory).not.toContain('--ui-port');
    expect(inMemory).not.toContain('--metrics-port');
    const measured = devServerArgs({
      ip: '127.0.0.1',
      port: 7400,
      uiPort: 8400,
      headless: true,
      dbFilename: null,
      namespace: 'default',
      metricsPort: 9400,
    });
    expect(measured.join(' ')).toContain('--metrics-port 9400');
  });
});

describe('the shared test server', () => {
  it('serves the provided namespace with Clotho search attributes', async () => {
    const { connection, namespace } = await testConnection();
    const registered = await listCustomSearchAttributes(connection, namespace);
    for (const [name, type] of EXPECTED_TYPES) expect(registered.get(name), name).toBe(type);
  });

  it('hands out distinct ids and task queues', () => {
    expect(uniqueId('x')).not.toBe(uniqueId('x'));
    expect(uniqueTaskQueue('x')).not.toBe(uniqueTaskQueue('x'));
  });
});

describe('startDevServer', () => {
  it('keeps namespaces and running workflows in its SQLite file across a stop and a kill -9', async () => {
    const dbFile = join(dir, 'persist.sqlite');
    const namespace = uniqueId('clotho-ns');
    const first = await startIsolatedDevServer({ dbFile });
    expect(first.dbFilename).toBe(dbFile);
    const connection = await Connection.connect({ address: first.address });
    const registered = await listCustomSearchAttributes(connection, 'default');
    for (const [name, type] of EXPECTED_TYPES) expect(registered.get(name), name).toBe(type);
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    // No worker polls this queue, so the workflow stays running: it must still be there after restarts.
    const workflowId = uniqueId('left-running');
    await new Client({ connection }).workflow.start('neverRuns', { taskQueue: uniqueTaskQueue('persist'), workflowId });
    await connection.close();
    await first.stop();
    expect(await isServerListening(first.address, 500)).toBe(false);

    const second = await startIsolatedDevServer({ dbFile, port: first.port });
    expect(second.address).toBe(first.address);
    await expectPersisted(second.address, namespace, [workflowId]);
    const laterId = uniqueId('after-restart');
    const secondConnection = await Connection.connect({ address: second.address });
    await new Client({ connection: secondConnection }).workflow.start('neverRuns', {
      taskQueue: uniqueTaskQueue('persist'),
      workflowId: laterId,
    });
    await secondConnection.close();
    await second.kill();

    const third = await startIsolatedDevServer({ dbFile });
    try {
      await expectPersisted(third.address, namespace, [workflowId, laterId]);
    } finally {
      await third.stop();
    }
  });

  it('fails fast with the server log when its port is taken', async () => {
    // The port answers TCP but never gRPC; its accepted sockets are closed by hand, since the
    // health probe's (unreferenced) socket may linger in grpc-js's subchannel pool.
    const accepted = new Set<Socket>();
    const blocker: Server = createServer((socket) => accepted.add(socket));
    const port = await freePort();
    await new Promise<void>((done) => blocker.listen(port, '127.0.0.1', done));
    try {
      // "server process exited" (not "not serving after") proves it stopped waiting when the process died.
      const failure = startDevServer({ stateDir: join(dir, 'taken'), port, dbFilename: null, headless: true, startTimeoutMs: 100_000 });
      await expect(failure).rejects.toThrow(/did not start: server process exited with 1\nlog .*\n[\s\S]*address already in use/);
    } finally {
      for (const socket of accepted) socket.destroy();
      await new Promise((done) => blocker.close(done));
    }
  });
});

describe('isServerListening', () => {
  it("answers true for a frontend and false for the dev server's other gRPC ports, which accept a connection", async () => {
    const server = await startIsolatedDevServer({ dbFile: join(dir, 'probe.sqlite') });
    try {
      expect(await isServerListening(server.address)).toBe(true);
      // `temporal server start-dev` serves history, matching and its worker service on ports it picks at random; a test
      // that took one of them for a free port once found "a server" there (UNIMPLEMENTED: unknown service OperatorService).
      const others = (await listeningPorts(server.pid)).filter((port) => port !== server.port);
      const accepting: number[] = [];
      for (const port of others) {
        const address = `127.0.0.1:${port}`;
        expect(await isServerListening(address, 1_000), address).toBe(false);
        if (await connects(address)) accepting.push(port);
      }
      // The internal gRPC services pass a plain connection check (it accepts UNIMPLEMENTED): the probe must do more.
      expect(accepting.length).toBeGreaterThanOrEqual(1);
    } finally {
      await server.stop();
    }
  });
});

/** TCP ports a process listens on, from its socket descriptors and /proc/net/tcp (Linux). */
async function listeningPorts(pid: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const ports = new Set<number>();
  for (const line of (await readFile('/proc/net/tcp', 'utf8')).split('\n').slice(1)) {
    const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
    if (state === '0A' && inode && inodes.has(inode)) ports.add(Number.parseInt(local!.split(':')[1]!, 16));
  }
  return [...ports];
}

/** What `isServerListening` used to check: a gRPC channel that connects, UNIMPLEMENTED tolerated. */
async function connects(address: string): Promise<boolean> {
  const connection = Connection.lazy({ address, connectTimeout: 1_000 });
  try {
    await connection.ensureConnected();
    return true;
  } catch {
    return false;
  } finally {
    await connection.close();
  }
}

async function expectPersisted(address: string, namespace: string, workflowIds: string[]): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const described = await connection.workflowService.describeNamespace({ namespace });
    expect(described.namespaceInfo?.name).toBe(namespace);
    const client = new Client({ connection });
    for (const id of workflowIds) expect((await client.workflow.getHandle(id).describe()).status.name).toBe('RUNNING');
  } finally {
    await connection.close();
  }
}

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SANDBOX_LIMITS, ENSURE_SANDBOX_SCRIPT, runSandboxed, type SandboxLimits } from './sandbox.js';

/** Runs a Python program in the sandbox; `marker` is an argument that names its processes on the host. */
const python = (source: string, limits: SandboxLimits = {}, marker = randomUUID()) =>
  runSandboxed({ command: ['python3', 'main.py', marker], files: { 'main.py': source }, limits });

/** Host processes whose command line holds `marker`: none may outlive their run. */
function processesWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker) ? [Number(pid)] : [];
      } catch {
        return []; // it ended while we looked
      }
    });
}

describe('runSandboxed: programs run and report', () => {
  it('runs a command on the given files and stdin, with exit status, stdout and stderr', async () => {
    const result = await runSandboxed({
      command: ['python3', 'lib/main.py'],
      files: {
        'lib/main.py':
          'import sys, helper\nprint(helper.double(int(sys.stdin.read())))\nprint("to stderr", file=sys.stderr)\nsys.exit(3)\n',
        'lib/helper.py': 'def double(x):\n    return 2 * x\n',
      },
      stdin: '21',
    });
    expect(result).toMatchObject({
      exitCode: 3,
      stdout: '42\n',
      stderr: 'to stderr\n',
      timedOut: false,
      killedBy: null,
      outputTruncated: false,
    });
  });

  it("passes only its own environment: nothing of the host's", async () => {
    process.env.CLOTHO_SANDBOX_SECRET = 'host secret';
    try {
      const result = await runSandboxed({ command: ['sh', '-c', 'env | sort'], env: { GREETING: 'hi' } });
      expect(result.stdout.trim().split('\n')).toEqual([
        'GREETING=hi',
        'HOME=/sandbox',
        'LANG=C.UTF-8',
        'PATH=/usr/local/bin:/usr/bin:/bin',
        'PWD=/sandbox',
        'TMPDIR=/sandbox',
      ]);
    } finally {
      delete process.env.CLOTHO_SANDBOX_SECRET;
    }
  });

  it('runs without capabilities, unable to gain any, and as nobody when Clotho is root', async () => {
    const result = await python('import os\nprint(os.getuid())\nprint(open("/proc/self/status").read())');
    const [uid, status] = [result.stdout.split('\n')[0], result.stdout];
    if (process.getuid?.() === 0) expect(uid).toBe('65534');
    expect(status).toMatch(/CapEff:\s+0000000000000000/);
    expect(status).toMatch(/CapBnd:\s+0000000000000000/);
    expect(status).toMatch(/NoNewPrivs:\s+1/);
    // Nor can it make a user namespace of its own, where it would be root again.
    const nested = await runSandboxed({ command: ['unshare', '--user', '--map-root-user', 'id', '-u'] });
    expect(nested.exitCode).not.toBe(0);
    expect(nested.stdout).toBe('');
  });

  it("reports a program ended by a signal as 128 + n, with the signal's name", async () => {
    const result = await python('import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)');
    expect(result).toMatchObject({ exitCode: 128 + 11, killedBy: 'SIGSEGV', timedOut: false });
  });
});

describe('runSandboxed: isolation', () => {
  let server: Server;
  let port: number;
  let connections = 0;
  beforeAll(async () => {
    server = createServer((socket) => {
      connections++;
      socket.end('hello from the host\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("blocks the network: a TCP server on the host's 127.0.0.1 cannot be reached from inside", async () => {
    const client = `import socket, sys\ns = socket.create_connection(("127.0.0.1", ${port}), timeout=5)\nprint(s.recv(100).decode().strip())\n`;
    // The same program outside the sandbox reaches the server: the test would notice a server that was not there.
    const outside = await promisify(execFile)('python3', ['-c', client], { encoding: 'utf8' });
    expect(outside.stdout.trim()).toBe('hello from the host');
    expect(connections).toBe(1);

    const inside = await python(client);
    expect(inside.exitCode).toBe(1);
    expect(inside.stderr).toContain('ConnectionRefusedError');
    expect(connections).toBe(1);
    // No route anywhere else either: the namespace has only its own loopback.
    const dns = await python('import socket\nsocket.create_connection(("1.1.1.1", 53), timeout=5)');
    expect(dns.exitCode).toBe(1);
    expect(dns.stderr).toMatch(/OSError: \[Errno 101\] Network is unreachable/);
  });

  it('lets the program write only in its own folder: the host, /usr, /tmp and /dev are read-only or absent', async () => {
    const hostDir = mkdtempSync(join(tmpdir(), 'clotho-sandbox-host-'));
    try {
      const targets = [
        join(hostDir, 'escaped'),
        '/usr/escaped',
        '/tmp/escaped',
        '/escaped',
        '/dev/escaped',
        '/proc/escaped',
        '/sys/escaped',
      ];
      const source = [
        'import json, sys',
        'results = {}',
        `for path in ${JSON.stringify(targets)}:`,
        '    try:',
        '        open(path, "w").write("x")',
        '        results[path] = "written"',
        '    except OSError as e:',
        '        results[path] = e.strerror',
        'open("mine.txt", "w").write("ok")',
        'results["mine"] = open("/sandbox/mine.txt").read()',
        'print(json.dumps(results))',
      ].join('\n');
      const result = await python(source);
      expect(result.exitCode).toBe(0);
      const results = JSON.parse(result.stdout) as Record<string, string>;
      expect(results.mine).toBe('ok');
      for (const target of targets) expect(results[target], target).toMatch(/^(Read-only file system|No such file or directory)$/);
      expect(readdirSync(hostDir)).toEqual([]);
      expect(existsSync('/usr/escaped')).toBe(false);
    } finally {
      rmSync(hostDir, { recursive: true, force: true });
    }
  });

  it('bounds the writable folder and each file', async () => {
    const full = await python('open("a", "wb").write(b"x" * (3 << 20))\nopen("b", "wb").write(b"x" * (3 << 20))', {
      diskBytes: 4 << 20,
      fileBytes: 8 << 20,
    });
    expect(full.stderr).toContain('No space left on device');
    const big = await python('open("a", "wb").write(b"x" * (2 << 20))', { fileBytes: 1 << 20 });
    expect(big.stderr).toContain('File too large');
  });

  it("keeps each sandbox's process count its own: three at once may each start 20 processes", async () => {
    const script = 'for i in $(seq 20); do sleep 0.5 & done; wait; echo done';
    const results = await Promise.all([1, 2, 3].map(() => runSandboxed({ command: ['sh', '-c', script] })));
    for (const result of results) expect(result).toMatchObject({ exitCode: 0, stdout: 'done\n' });
  });
});

describe('runSandboxed: limits stop hostile programs', () => {
  it('stops a fork bomb: forks fail past the process limit, the wall-time kill ends them all', async () => {
    const marker = randomUUID();
    const bomb = 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n';
    const result = await python(bomb, { processes: 8, wallTimeMs: 2_000 }, marker);
    expect(result).toMatchObject({ exitCode: null, killedBy: 'wall_time', timedOut: true });
    expect(processesWith(marker)).toEqual([]);
  });

  it('stops an infinite loop at its wall time, and at its CPU time', async () => {
    const marker = randomUUID();
    const wall = await python('while True:\n    pass\n', { wallTimeMs: 1_000, cpuSeconds: 60 }, marker);
    expect(wall).toMatchObject({ exitCode: null, killedBy: 'wall_time', timedOut: true });
    expect(wall.durationMs).toBeLessThan(5_000);
    expect(processesWith(marker)).toEqual([]);

    const cpu = await python('while True:\n    pass\n', { cpuSeconds: 1, wallTimeMs: 30_000 });
    expect(cpu).toMatchObject({ exitCode: 128 + 24, killedBy: 'SIGXCPU', timedOut: true });
  });

  it('stops a memory hog: allocations past the limit fail', async () => {
    const hog = 'chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))\n';
    const result = await python(hog, { memoryBytes: 256 << 20 });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('MemoryError');
  });

  it('cuts a flood of output at its limit and stops the program', async () => {
    const marker = randomUUID();
    const result = await python('import sys\nwhile True:\n    sys.stdout.write("y" * 4096)\n', { outputBytes: 64 << 10 }, marker);
    expect(result).toMatchObject({ exitCode: null, killedBy: 'output', outputTruncated: true, timedOut: false });
    expect(result.stdout).toBe('y'.repeat(64 << 10));
    expect(processesWith(marker)).toEqual([]);
  });

  it('has defaults for every limit', () => {
    expect(DEFAULT_SANDBOX_LIMITS).toEqual({
      wallTimeMs: 10_000,
      cpuSeconds: 10,
      memoryBytes: 1 << 30,
      processes: 32,
      outputBytes: 1 << 20,
      diskBytes: 64 << 20,
      fileBytes: 16 << 20,
      openFiles: 256,
    });
  });
});

describe('runSandboxed: a sandbox that cannot run throws, it is never a result', () => {
  it('names the setup script when bwrap is missing', async () => {
    const saved = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await expect(runSandboxed({ command: ['true'] })).rejects.toThrow(
        `bubblewrap (bwrap) is not installed; run \`node ${ENSURE_SANDBOX_SCRIPT}\``,
      );
    } finally {
      process.env.PATH = saved;
    }
    expect(existsSync(ENSURE_SANDBOX_SCRIPT)).toBe(true);
  });

  it('rejects a command the sandbox does not have, and a bwrap that fails to set up', async () => {
    await expect(runSandboxed({ command: ['no-such-interpreter'] })).rejects.toThrow(
      '"no-such-interpreter" is not installed in the sandbox\'s PATH',
    );
    await expect(runSandboxed({ command: ['/opt/elsewhere/python3'] })).rejects.toThrow('outside the folders the sandbox shows');
    await expect(runSandboxed({ command: ['true'], readOnlyBinds: ['/no/such/folder'] })).rejects.toThrow(
      /sandbox: bwrap failed to start \(exit 1\): bwrap: .*\/no\/such\/folder/,
    );
    await expect(runSandboxed({ command: ['true'], files: { '../escape': 'x' } })).rejects.toThrow(
      'must be a relative path inside the work folder',
    );
  });

  it('kills the sandbox and rejects when aborted', async () => {
    const marker = randomUUID();
    const controller = new AbortController();
    const run = runSandboxed({ command: ['python3', '-c', 'import time; time.sleep(60)', marker], signal: controller.signal });
    // Abort once the program is running: its process is visible on the host.
    while (processesWith(marker).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('python3')).length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    controller.abort(new Error('cancelled by the test'));
    await expect(run).rejects.toThrow('cancelled by the test');
    expect(processesWith(marker)).toEqual([]);
  });

  it('kills it whole when aborted while bwrap is still making the namespaces', async () => {
    // Found in testing: killing bwrap alone there left the sandbox's init running in about half of such runs.
    for (let delayMs = 0; delayMs < 20; delayMs++) {
      const marker = randomUUID();
      const controller = new AbortController();
      const run = runSandboxed({ command: ['python3', '-c', 'import time; time.sleep(60)', marker], signal: controller.signal });
      setTimeout(() => controller.abort(new Error('cancelled early')), delayMs);
      await expect(run).rejects.toThrow('cancelled early');
      expect(processesWith(marker), `aborted after ${delayMs} ms`).toEqual([]);
    }
  });
});

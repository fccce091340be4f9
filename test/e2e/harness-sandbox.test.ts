import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHarnessRollout, type HarnessRolloutRecord } from '../../src/activities/harness.js';
import { ServerConfigSchema } from '../../src/config/schemas.js';
import { defineEnvironment, fromItems } from '../../src/env/define.js';
import type { HarnessAgent, HarnessCheck } from '../../src/env/harness.js';
import { loadEnvironmentData } from '../../src/env/loaded.js';
import { resolveEnvConfig } from '../../src/env/testing.js';
import { createServerManager, type ServerManager } from '../../src/inference/server-manager.js';
import { loadTokenizer, type Tokenizer } from '../../src/inference/tokenizer.js';
import { FileSystemStore } from '../../src/store/trajectory-store.js';
import { startScriptedOpenAI, type ScriptedOpenAI } from '../support/scripted-openai.js';

/**
 * The harness's safety on the real sandbox (issue 27): an agent program that makes its one model call through the
 * session and then tries every way out it can think of. Each must fail with the error the sandbox is meant to give;
 * only the session's address and the workspace work.
 */

const BWRAP_MISSING = !(process.env.PATH ?? '').split(delimiter).some((dir) => {
  try {
    accessSync(join(dir, 'bwrap'), constants.X_OK);
    return true;
  } catch {
    return false;
  }
});
const SUITE = BWRAP_MISSING
  ? 'harness sandbox: SKIPPED, bubblewrap (bwrap) is not on PATH (`node scripts/ensure-sandbox.mjs` installs it)'
  : 'harness sandbox: an agent that tries to escape';

const REPLY = 'I will now try to leave the sandbox.';
const RESULTS = 'escape-results.json';

/**
 * The agent (argv: mode, then the host's addresses to try): one model call through OPENAI_BASE_URL, then in `escape`
 * mode each escape, its outcome written to the workspace and printed as one JSON line; in `spin` mode a loop forever.
 */
const AGENT = String.raw`
import errno, json, os, socket, sys, urllib.request

def code(e):
    return errno.errorcode.get(getattr(e, "errno", None) or -1, type(e).__name__)

def ask():
    body = json.dumps({"model": os.environ["OPENAI_MODEL"], "messages": [{"role": "user", "content": "Get out."}]})
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body.encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["choices"][0]["message"]["content"]

def attempt(fn):
    try:
        return {"done": repr(fn())}
    except Exception as e:
        return {"error": type(e).__name__, "errno": code(e)}

def write(path):
    with open(path, "w") as f:
        f.write("escaped")

def connect(host, port):
    socket.create_connection((host, port), timeout=5).close()

def forks():
    r, w = os.pipe()
    children = []
    try:
        while len(children) < 64:
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(w)
                    os.read(r, 1)
                finally:
                    os._exit(0)
            children.append(pid)
        return {"forked": len(children), "error": None}
    except OSError as e:
        return {"forked": len(children), "error": type(e).__name__, "errno": code(e)}
    finally:
        os.close(w)
        for pid in children:
            os.waitpid(pid, 0)

def memory():
    chunks = []
    try:
        while len(chunks) < 64:
            chunks.append(bytearray(16 << 20))
        return {"allocatedMiB": 16 * len(chunks), "error": None}
    except MemoryError:
        return {"allocatedMiB": 16 * len(chunks), "error": "MemoryError"}

def session_socket():
    # Named on the relay's command line (any process of the sandbox can read another's).
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().decode().split("\0")
        except OSError:
            continue
        for arg in args:
            if arg.endswith("/model.sock"):
                return arg

mode, host_dir, host_port, model_port, host_pid = sys.argv[1:6]
model = ask()
if mode == "plant":
    # Links in the workspace to host paths, for the host to follow when it writes the check's files and chowns.
    os.symlink(os.path.join(host_dir, "chowned"), "link-to-host")
    os.remove("TASK.md")
    os.symlink(os.path.join(host_dir, "overwritten"), "TASK.md")
    sys.exit(0)
if mode == "spin":
    open("spun", "w").write("spinning\n")
    print("spinning", flush=True)
    while True:
        pass

socket_path = session_socket()
results = {
    "model": model,
    "task": open("TASK.md").read(),
    "cwd": os.getcwd(),
    "external": attempt(lambda: connect("1.1.1.1", 53)),
    "hostLoopback": attempt(lambda: connect("127.0.0.1", int(host_port))),
    "modelServer": attempt(lambda: connect("127.0.0.1", int(model_port))),
    "hostDir": attempt(lambda: write(os.path.join(host_dir, "escaped"))),
    "tmp": attempt(lambda: write("/tmp/clotho-escaped")),
    "usr": attempt(lambda: write("/usr/clotho-escaped")),
    "socket": socket_path,
    "besideSocket": attempt(lambda: write(os.path.join(os.path.dirname(socket_path), "escaped"))),
    "removeSocket": attempt(lambda: os.unlink(socket_path)),
    "shadow": attempt(lambda: open("/etc/shadow").read()),
    "root": attempt(lambda: os.listdir("/root")),
    "signalHost": attempt(lambda: os.kill(int(host_pid), 0)),
    "fork": forks(),
    "memory": memory(),
}
line = json.dumps(results, separators=(",", ":"))
open("${RESULTS}", "w").write(line)
print(line, flush=True)
`;

/** An agent that tells the model where the session's socket is (as the relay's command line names it), then exits. */
const SOCKET_AGENT = String.raw`
import json, os, urllib.request
path = next(arg for pid in filter(str.isdigit, os.listdir("/proc"))
            for arg in open(f"/proc/{pid}/cmdline", "rb").read().decode().split("\0") if arg.endswith("/model.sock"))
body = json.dumps({"model": os.environ["OPENAI_MODEL"], "messages": [{"role": "user", "content": "socket:" + path}]})
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body.encode(),
                                 headers={"content-type": "application/json"})
urllib.request.urlopen(request, timeout=60).read()
`;

/** A connection to a Unix socket as another user (uid and gid 1000): its outcome, `connected` or the errno's name. */
const CONNECT_AS_OTHER = String.raw`
import errno, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    print(errno.errorcode.get(e.errno, type(e).__name__))
`;

/** What the agent reports of one escape: the exception's class and errno, or what it got when it was not stopped. */
interface Attempt {
  done?: string;
  error?: string;
  errno?: string;
}
interface EscapeResults {
  model: string;
  task: string;
  cwd: string;
  external: Attempt;
  hostLoopback: Attempt;
  modelServer: Attempt;
  hostDir: Attempt;
  tmp: Attempt;
  usr: Attempt;
  socket: string | null;
  besideSocket: Attempt;
  removeSocket: Attempt;
  shadow: Attempt;
  root: Attempt;
  signalHost: Attempt;
  fork: { forked: number; error: string | null; errno?: string };
  memory: { allocatedMiB: number; error: string | null };
}

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

describe.skipIf(BWRAP_MISSING)(SUITE, () => {
  let qwen: Tokenizer;
  let scripted: ScriptedOpenAI;
  let manager: ServerManager;
  let hostServer: Server;
  let hostPort: number;
  let hostConnections = 0;
  let scratch: string;
  /** Runs before the model answers a prompt (while the rollout waits for it), given the prompt's text. */
  let beforeAnswer: (prompt: string) => Promise<void> = async () => undefined;

  beforeAll(async () => {
    qwen = await loadTokenizer('qwen3');
    const ids = [...qwen.encode(REPLY, { addSpecialTokens: false }), qwen.eos!.id];
    scripted = await startScriptedOpenAI({
      responder: async (body) => {
        await beforeAnswer(qwen.decode(body.prompt as number[]));
        return { choices: [{ text: REPLY, tokenIds: ids, logprobs: ids.map((_, j) => -((j % 7) + 1) / 8) }] };
      },
    });
    manager = createServerManager({
      servers: [ServerConfigSchema.parse({ base_url: scripted.baseUrl, server_type: 'openai', model_name: 'scripted' })],
    });
    hostServer = createServer((socket) => {
      hostConnections++;
      socket.end('hello from the host\n');
    });
    await new Promise<void>((resolve) => hostServer.listen(0, '127.0.0.1', resolve));
    hostPort = (hostServer.address() as { port: number }).port;
    scratch = await mkdtemp(join(tmpdir(), 'clotho-harness-escape-'));
  });

  afterAll(async () => {
    manager?.stop();
    await scripted?.close();
    await new Promise<void>((resolve) => (hostServer ? hostServer.close(() => resolve()) : resolve()));
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  /** One rollout of a one-item environment whose harness runs `agent` over a one-file workspace, then `check`. */
  async function rollout(agent: HarnessAgent, check: HarnessCheck, run: string): Promise<HarnessRolloutRecord> {
    const definition = defineEnvironment({
      name: 'escape',
      description: 'an agent that tries to leave its sandbox',
      config: {},
      load: async () => fromItems([{ id: 'escape' }]),
      prompt: () => [{ role: 'user', content: 'Get out.' }],
      harness: {
        agent: () => agent,
        workspace: () => ({ 'TASK.md': 'Leave the sandbox if you can.\n' }),
        task: () => 'Get out.',
        check: () => check,
      },
      parse: (_completion, _item, { harness }) => harness?.check.passed ?? false,
      score: ({ parsed }) => (parsed ? 1 : 0),
    });
    const env = await loadEnvironmentData(definition, resolveEnvConfig(definition));
    const store = new FileSystemStore(join(scratch, 'store'));
    const input = {
      runId: run,
      environment: 'escape',
      itemIndex: 0,
      sample: 0,
      sampling: { temperature: 1, topP: 1 },
      maxTurns: 4,
      maxTokenLength: 4096,
    };
    const live = { signal: new AbortController().signal, heartbeat: () => undefined };
    return runHarnessRollout({ store, continuation: () => ({ tokenizer: qwen, client: manager }) }, env, input, live);
  }

  const agent = (mode: 'escape' | 'spin' | 'plant', limits: HarnessAgent['limits'], marker: string, hostDir: string): HarnessAgent => ({
    name: `escape-${mode}`,
    command: () => [
      'python3',
      '/sandbox/.agent/escape.py',
      mode,
      hostDir,
      String(hostPort),
      new URL(scripted.baseUrl).port,
      String(process.pid),
      marker,
    ],
    files: { '.agent/escape.py': AGENT },
    limits,
  });

  it('blocks every escape: network, host files, processes and memory; the session and the workspace work', async () => {
    // The host's server answers from the host: a blocked connection below is the sandbox's doing.
    const greeting = await new Promise<string>((resolve, reject) => {
      const socket = connect(hostPort, '127.0.0.1');
      socket.setEncoding('utf8');
      let text = '';
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(greeting).toBe('hello from the host\n');
    expect(hostConnections).toBe(1);
    const hostDir = join(scratch, 'host-dir');
    await mkdir(hostDir);
    const callsBefore = scripted.calls;

    const marker = randomUUID();
    const { outcome, trajectory } = await rollout(
      agent('escape', { processes: 16, memoryBytes: 256 << 20, wallTimeMs: 60_000 }, marker, hostDir),
      { command: ['sh', '-c', `test -f TASK.md && cat ${RESULTS}`] },
      'escape',
    );

    expect(outcome, outcome.output).toMatchObject({ agent: 'escape-escape', ended: 'exited', exitCode: 0, calls: 1, replayed: 0 });
    // Written in the workspace by the agent, read there by the check in a fresh sandbox.
    expect(outcome.check).toMatchObject({ exitCode: 0, passed: true, timedOut: false });
    const results = JSON.parse(outcome.check.output) as EscapeResults;
    expect(JSON.parse(outcome.output.trim())).toEqual(results);

    // (8) The session's address works: the one model call went through it to the model, and is the trajectory.
    expect(results.model).toBe(REPLY);
    expect(scripted.calls - callsBefore).toBe(1);
    expect(trajectory.messages.at(-1)).toEqual({ role: 'assistant', content: REPLY });
    expect(trajectory.masks.filter((m) => m !== -100)).toHaveLength(qwen.encode(REPLY, { addSpecialTokens: false }).length + 1);
    expect(results.task).toBe('Leave the sandbox if you can.\n');
    expect(results.cwd).toBe('/sandbox/work');

    // (1) No route out, (2) and the host's loopback is not the sandbox's: neither the test's server nor the model's.
    expect(results.external).toEqual({ error: 'OSError', errno: 'ENETUNREACH' });
    expect(results.hostLoopback).toEqual({ error: 'ConnectionRefusedError', errno: 'ECONNREFUSED' });
    expect(results.modelServer).toEqual({ error: 'ConnectionRefusedError', errno: 'ECONNREFUSED' });
    expect(hostConnections).toBe(1);

    // (3) Nothing of the host is writable: not its folders, not /tmp or /usr, not the session's socket or its folder.
    expect(results.hostDir).toEqual({ error: 'FileNotFoundError', errno: 'ENOENT' });
    expect(results.tmp).toEqual({ error: 'OSError', errno: 'EROFS' });
    expect(results.usr).toEqual({ error: 'OSError', errno: 'EROFS' });
    expect(readdirSync(hostDir)).toEqual([]);
    expect(existsSync('/tmp/clotho-escaped')).toBe(false);
    expect(existsSync('/usr/clotho-escaped')).toBe(false);
    expect(results.socket).toMatch(/\/session\/model\.sock$/);
    expect(results.besideSocket).toEqual({ error: 'OSError', errno: 'EROFS' });
    expect(results.removeSocket).toEqual({ error: 'OSError', errno: 'EROFS' });

    // (4) Nor readable: the host's secrets are not there at all; nor are its processes.
    expect(existsSync('/etc/shadow') || existsSync('/root')).toBe(true);
    expect(results.shadow).toEqual({ error: 'FileNotFoundError', errno: 'ENOENT' });
    expect(results.root).toEqual({ error: 'FileNotFoundError', errno: 'ENOENT' });
    expect(results.signalHost).toEqual({ error: 'ProcessLookupError', errno: 'ESRCH' });

    // (5) Forks fail at the process limit (16, the session's relay and the agent counted in), (6) allocations at 256 MiB.
    expect(results.fork.error).toBe('BlockingIOError');
    expect(results.fork.errno).toBe('EAGAIN');
    expect(results.fork.forked).toBeGreaterThan(0);
    expect(results.fork.forked).toBeLessThan(16);
    expect(results.memory.error).toBe('MemoryError');
    expect(results.memory.allocatedMiB).toBeLessThan(256);

    expect(processesWith(marker)).toEqual([]);
  });

  // The workspace is the agent's once it ran: a link it leaves there must not lead the host to write or chown host
  // files (the check's files are put back inside the check's sandbox, and nothing is chowned after the agent).
  it('does not follow links the agent left in its workspace to host files', async () => {
    const hostDir = join(scratch, 'planted');
    await mkdir(hostDir);
    for (const name of ['chowned', 'overwritten']) await writeFile(join(hostDir, name), 'host file\n', { mode: 0o600 });
    const { outcome } = await rollout(
      agent('plant', {}, randomUUID(), hostDir),
      { command: ['cat', 'TASK.md'], files: { 'TASK.md': 'written by the check\n' } },
      'plant',
    );
    expect(outcome).toMatchObject({ ended: 'exited', exitCode: 0, calls: 1 });
    expect(readFileSync(join(hostDir, 'overwritten'), 'utf8')).toBe('host file\n');
    expect(statSync(join(hostDir, 'chowned')).uid).toBe(process.getuid!());
    expect(statSync(join(hostDir, 'overwritten')).uid).toBe(process.getuid!());
  });

  // Issue 38, finding 9: the socket is the policy's trajectory: only the sandbox's user may reach it.
  it("keeps the session's socket to the sandbox's user: folders 0700, socket 0600, another user refused", async () => {
    const seen: { socket: string; modes: string[]; owners: number[]; other: string }[] = [];
    beforeAnswer = async (prompt) => {
      const socket = /socket:(\S+model\.sock)/.exec(prompt)?.[1];
      if (!socket) return;
      const paths = [dirname(dirname(socket)), dirname(socket), socket];
      const stats = await Promise.all(paths.map((path) => stat(path)));
      // Root can become another user; anyone else is another user to the sandbox's (see the owners below).
      const other =
        process.getuid!() === 0
          ? (
              await promisify(execFile)('setpriv', [
                '--reuid=1000',
                '--regid=1000',
                '--clear-groups',
                '/usr/bin/python3',
                '-c',
                CONNECT_AS_OTHER,
                socket,
              ])
            ).stdout.trim()
          : 'not root';
      seen.push({ socket, modes: stats.map((s) => (s.mode & 0o777).toString(8)), owners: stats.map((s) => s.uid), other });
    };
    try {
      const { outcome } = await rollout(
        { name: 'socket', command: () => ['python3', '/sandbox/.agent/tell.py'], files: { '.agent/tell.py': SOCKET_AGENT } },
        { command: ['true'] },
        'socket',
      );
      expect(outcome, outcome.output).toMatchObject({ ended: 'exited', exitCode: 0, calls: 1 });
    } finally {
      beforeAnswer = async () => undefined;
    }
    // As root the sandbox runs as nobody, which must own what it reaches; otherwise as this process's user.
    const sandboxUser = process.getuid!() === 0 ? 65534 : process.getuid!();
    expect(seen).toEqual([
      {
        socket: expect.stringMatching(/\/session\/model\.sock$/),
        modes: ['700', '700', '600'],
        owners: [sandboxUser, sandboxUser, sandboxUser],
        other: process.getuid!() === 0 ? 'EACCES' : 'not root',
      },
    ]);
  });

  it('stops an agent that spins past its wall time or its CPU time, and still checks its workspace', async () => {
    const hostDir = join(scratch, 'unused');
    for (const [limits, exitCode] of [
      [{ wallTimeMs: 3_000, cpuSeconds: 60 }, null],
      // SIGXCPU (24) at the CPU limit, as a shell reports a signal.
      [{ wallTimeMs: 60_000, cpuSeconds: 1 }, 128 + 24],
    ] as const) {
      const marker = randomUUID();
      const started = Date.now();
      const { outcome } = await rollout(agent('spin', limits, marker, hostDir), { command: ['cat', 'spun'] }, `spin-${limits.cpuSeconds}`);
      expect(outcome, JSON.stringify(limits)).toMatchObject({
        ended: 'time',
        exitCode,
        calls: 1,
        check: { exitCode: 0, passed: true, output: 'spinning\n', timedOut: false },
      });
      expect(outcome.output).toContain('spinning');
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(processesWith(marker)).toEqual([]);
    }
  });
});

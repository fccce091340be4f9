import { dirname, delimiter } from 'node:path';
import { findExecutable } from '../../kits/sandbox/sandbox.js';
import { clothoHome } from '../../store/paths.js';
import { VerifiersReadySchema, type VerifiersReady } from '../../schema/verifiers.js';
import { startPythonWorker, type PythonWorker } from '../python-worker.js';
import { VERIFIERS_SOURCES } from './python.js';

/** How to start the Python worker of one verifiers environment. */
export interface VerifiersWorkerOptions {
  python: string;
  /** `<env>`: an id, a folder or a module path. */
  spec: string;
  /** verifiers' own flags, unchanged. */
  verifiersArgs: string[];
  taskQueue: string;
  /** The command's session host. */
  hostSocket: string;
  address: string;
  namespace: string;
}

export type VerifiersWorker = PythonWorker<VerifiersReady>;

/**
 * Starts the verifiers worker (clients/python-verifiers) and waits for its ready line. It runs in a PID namespace of
 * its own (bubblewrap's `--unshare-pid`, the host's file system as it is), so the agent programs, tool servers and uv
 * processes verifiers starts in sessions of their own (`start_new_session`, out of reach of a process group's kill)
 * die with it: when the worker dies, by kill -9 too, the namespace's init exits and the kernel kills everything in it;
 * when the command dies, bwrap follows (`--die-with-parent`) and the worker's stdin closes. Without bwrap (or with
 * `CLOTHO_VERIFIERS_PID_NAMESPACE=0`) it runs in a process group only, and an episode's programs may outlive a kill.
 * The venv's `bin` goes first on PATH: verifiers prepares every agent program with the venv's uv.
 */
export function startVerifiersWorker(options: VerifiersWorkerOptions): Promise<VerifiersWorker> {
  const { python, spec, verifiersArgs, taskQueue, hostSocket, address, namespace } = options;
  const worker = [
    python,
    '-m',
    'clotho_verifiers',
    'worker',
    '--exit-with-stdin',
    '--task-queue',
    taskQueue,
    '--host-socket',
    hostSocket,
    '--address',
    address,
    '--namespace',
    namespace,
    '--home',
    clothoHome(),
    spec,
    ...verifiersArgs,
  ];
  const bwrap = process.env.CLOTHO_VERIFIERS_PID_NAMESPACE === '0' ? null : findExecutable('bwrap', process.env.PATH ?? '');
  const [command, ...args] = bwrap
    ? [bwrap, '--dev-bind', '/', '/', '--proc', '/proc', '--unshare-pid', '--die-with-parent', '--', ...worker]
    : worker;
  return startPythonWorker({
    command: command!,
    args,
    env: {
      ...process.env,
      PATH: [dirname(python), process.env.PATH].filter(Boolean).join(delimiter),
      PYTHONPATH: [VERIFIERS_SOURCES, process.env.PYTHONPATH].filter(Boolean).join(delimiter),
      PYTHONUNBUFFERED: '1',
    },
    ready: VerifiersReadySchema,
    what: 'the verifiers worker',
  });
}

import { AtroposReadySchema, type AtroposReady } from '../../schema/atropos.js';
import { startPythonWorker, type PythonWorker } from '../python-worker.js';
import { atroposWorkerEnv } from './python.js';

/** How to start the Python worker of one Atropos environment. */
export interface AtroposWorkerOptions {
  python: string;
  /** `path/to/env.py[:ClassName]`. */
  spec: string;
  mode: 'serve' | 'process' | 'evaluate';
  /** Atropos's own flags, unchanged. */
  atroposArgs: string[];
  taskQueue: string;
  address: string;
  namespace: string;
  /** The run's key for signing pickled items (`ensureAtroposItemKey`). */
  itemKeyFile: string;
  /** Each line the worker prints (stdout or stderr) once it serves: what its environment prints, and its logs. */
  onOutput?: (line: string) => void;
}

export type AtroposWorker = PythonWorker<AtroposReady>;

/**
 * Starts the Python worker in a process group of its own (a terminal's Ctrl-C reaches this command, which stops it in
 * order) and resolves once it polls, with the environment Atropos built (its ready line). Its stdin is a pipe it
 * watches: if this process dies, even by kill -9, the worker sees end of file and exits, so no orphan serves the
 * queue. Rejects with the end of its stderr (Atropos's own errors: a bad flag, an ambiguous class) if it exits first.
 */
export function startAtroposWorker(options: AtroposWorkerOptions): Promise<AtroposWorker> {
  const { python, spec, mode, atroposArgs, taskQueue, address, namespace, itemKeyFile } = options;
  const args = [
    '-m',
    'clotho_atropos',
    'worker',
    '--exit-with-stdin',
    '--item-key-file',
    itemKeyFile,
    '--task-queue',
    taskQueue,
    '--address',
    address,
    '--namespace',
    namespace,
  ];
  return startPythonWorker({
    command: python,
    args: [...args, spec, mode, ...atroposArgs],
    env: atroposWorkerEnv(),
    ready: AtroposReadySchema,
    what: 'the Atropos worker',
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
  });
}

/** The worker exited before it polled; `output` is what it printed (Atropos's help, or its error). */
export { PythonWorkerExit as AtroposWorkerExit } from '../python-worker.js';

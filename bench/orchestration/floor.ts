/** What an empty workflow per group costs on the bench's dev server and in this process (floor-workflows.ts). */
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import type { BenchTemporal } from '../support.js';
import { cpuStopwatch } from '../tool-use/cpu.js';

const TASK_QUEUE = 'clotho-bench-floor';

/**
 * CPU per empty group, in the dev server and in this process, after a warm-up of one wave. Run after Clotho's workers
 * have installed the SDK's runtime (quiet below WARN).
 */
export async function measureFloor(bench: BenchTemporal, groups: number, inFlight: number): Promise<{ serverMs: number; selfMs: number }> {
  const connection = await NativeConnection.connect({ address: bench.address });
  const worker = await Worker.create({
    connection,
    taskQueue: TASK_QUEUE,
    workflowBundle: await bundleWorkflowCode({
      workflowsPath: new URL('./floor-workflows.ts', import.meta.url).pathname,
      logger: new DefaultLogger('WARN'),
    }),
    reuseV8Context: true,
    maxConcurrentWorkflowTaskExecutions: inFlight * 2,
  });
  const running = worker.run();
  try {
    const run = (n: number) =>
      bench.client.workflow.execute('emptyGroups', { taskQueue: TASK_QUEUE, workflowId: `floor-${n}-${Date.now()}`, args: [n, inFlight] });
    await run(inFlight);
    const cpu = cpuStopwatch(bench.serverPid);
    await run(groups);
    const used = cpu();
    return { serverMs: used.otherMs / groups, selfMs: used.selfMs / groups };
  } finally {
    worker.shutdown();
    await running;
    await connection.close();
  }
}

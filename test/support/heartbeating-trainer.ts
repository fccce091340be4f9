/**
 * A trainer worker process that takes one `trainStep` and trains forever, heartbeating: a live trainer holding a
 * batch. Tests SIGKILL it to see the batch go to another trainer. Usage: <address> <namespace> <task queue>.
 */
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { TrainStepInput } from '../../src/activities/trainer.js';

const [address, namespace, taskQueue] = process.argv.slice(2) as [string, string, string];
const connection = await NativeConnection.connect({ address });
const worker = await Worker.create({
  connection,
  namespace,
  taskQueue,
  maxConcurrentActivityTaskExecutions: 1,
  activities: {
    async trainStep(input: TrainStepInput): Promise<void> {
      process.stdout.write(`training ${JSON.stringify(input)}\n`);
      for (;;) {
        Context.current().heartbeat();
        await Context.current().sleep(300);
      }
    },
  },
});
await worker.run();

// Runs the official W&B JavaScript SDK (@wandb/sdk) in a worker thread of its own: the SDK reports a failed
// request by throwing from an event listener and handles SIGINT with process.exit(), so in the main thread
// an unreachable W&B would crash the run and Ctrl-C would skip Clotho's shutdown. Here a failure only ends
// this thread, and signals are not delivered to worker threads. Plain JavaScript: worker threads do not
// inherit the TypeScript loader. Messages in: init, log, finish. Messages out: console, ready, finished.
import { parentPort, workerData } from 'node:worker_threads';
import wandb from '@wandb/sdk';

// The SDK prints its errors and retries; the parent decides what the user sees.
for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
  console[level] = (...args) => parentPort.postMessage({ type: 'console', text: args.map(String).join(' ') });
}

const { id, name, project, entity, config } = workerData;
const running = wandb.init({ id, name, project, entity, config, settings: { silent: true } });
running.then(
  (run) => parentPort.postMessage({ type: 'ready', url: run.url() }),
  (error) => {
    throw error;
  },
);

parentPort.on('message', (message) => {
  if (message.type === 'log') wandb.log(message.data, message.step);
  if (message.type === 'finish') {
    running
      .then(() => wandb.finish(message.code))
      .then(() => parentPort.postMessage({ type: 'finished' }))
      .then(() => process.exit(0));
  }
});

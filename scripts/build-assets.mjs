// The part of `npm run build` that tsc does not do: files the compiled code reads beside itself. A file read through
// `new URL('./x', import.meta.url)` must sit at the same place under dist/ as beside its source.
import { cpSync } from 'node:fs';

const assets = [
  'src/cli/wandb/sdk-thread.mjs', // the wandb SDK's worker thread
  'environments/gsm8k/data', // GSM8K's test split (`--env.split test`)
  'src/kits/sandbox/loopback-forward.py', // an agent's way to its model, inside the sandbox
  'src/kits/sandbox/bash-agent.py', // the plain bash harness
];
for (const path of assets) cpSync(path, `dist/${path}`, { recursive: true });

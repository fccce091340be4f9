#!/usr/bin/env node
import { loadMain } from './load-main.js';

const main = await loadMain();
process.exitCode = await main(process.argv.slice(2));
// The command has returned and said all it had to. Workers left draining after Ctrl-C (src/cli/run.ts, stopWorkers)
// must not keep the process: their calls are the resumed run's, as after a kill -9.
setTimeout(() => process.exit(), 2_000).unref();

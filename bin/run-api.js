#!/usr/bin/env node
// `run-api` on the PATH (npm's bin): Atropos's server by name, so tools that start it get `clotho run-api`.
import { loadMain } from './load-main.js';

const main = await loadMain();
process.exitCode = await main(['run-api', ...process.argv.slice(2)]);

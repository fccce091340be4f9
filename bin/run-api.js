#!/usr/bin/env node
// `run-api` on the PATH (npm's bin): Atropos's server by name, so tools that start it get `clotho run-api`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(['run-api', ...process.argv.slice(2)]);

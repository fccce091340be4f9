#!/usr/bin/env node
import { loadMain } from './load-main.js';

const main = await loadMain();
process.exitCode = await main(process.argv.slice(2));

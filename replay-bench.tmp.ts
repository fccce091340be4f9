import { readFileSync } from 'node:fs';
import { Worker, bundleWorkflowCode } from '@temporalio/worker';
const quiet = { log(){}, trace(){}, debug(){}, info(){}, warn(){}, error(){} } as any;
const preload = (process.env.PRELOAD ?? '').split(',').filter(Boolean);
const bundle = await bundleWorkflowCode({ workflowsPath: '/work/main/src/workflows/index.ts', logger: quiet, preloadModules: preload });
const history = JSON.parse(readFileSync('test/replay/histories/rollout-group-finish-in-input.json', 'utf8'));
const N = Number(process.env.N ?? 400);
async function* histories() { for (let i = 0; i < N; i++) yield { workflowId: `wf-${i}`, history }; }
const t0 = performance.now(); const c0 = process.cpuUsage();
let errors = 0;
for await (const r of Worker.runReplayHistories({ workflowBundle: bundle }, histories())) if (r.error) { errors++; if (errors < 3) console.log(r.error); }
const c = process.cpuUsage(c0);
console.log(`preload=${preload.join('+') || 'none'} N=${N} wall ${(performance.now() - t0).toFixed(0)} ms, cpu/wf ${((c.user + c.system) / 1000 / N).toFixed(2)} ms, errors ${errors}`);

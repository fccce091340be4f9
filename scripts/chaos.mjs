// The long chaos test (`npm run test:chaos`): test/support/chaos/main.ts once per seed, each in a process of its own,
// then one summary line per seed. CHAOS_SEEDS=n runs n fresh seeds (default 3); CHAOS_SEED=s reruns one seed. Every
// other CHAOS_* variable goes through to main.ts (CHAOS_KILLS, CHAOS_STEPS, CHAOS_TARGETS, CHAOS_PROFILE, ...).
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';

const seeds = process.env.CHAOS_SEED
  ? [Number(process.env.CHAOS_SEED)]
  : Array.from({ length: Number(process.env.CHAOS_SEEDS ?? 3) }, () => randomInt(0, 2 ** 32 - 1));

const summaries = [];
let failed = 0;
for (const seed of seeds) {
  const child = spawn(process.execPath, ['--conditions=clotho-source', '--import', 'tsx', 'test/support/chaos/main.ts'], {
    env: { ...process.env, CHAOS_SEED: String(seed) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    output += chunk.toString();
  });
  const code = await new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? signal)));
  const summary =
    output.split('\n').findLast((l) => l.startsWith(`chaos seed=${seed}:`)) ?? `chaos seed=${seed}: no summary (the run broke off)`;
  if (code !== 0) failed++;
  summaries.push(`${code === 0 ? 'passed' : 'FAILED'}  ${summary}`);
}
console.log(`\n${summaries.join('\n')}\nchaos: ${seeds.length - failed} of ${seeds.length} seeds passed`);
process.exitCode = failed > 0 ? 1 : 0;

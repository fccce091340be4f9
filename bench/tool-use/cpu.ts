/** CPU time of this process and of the Temporal dev server, to tell work from waiting. */
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on every common Linux build). */
const TICKS_PER_S = 100;

/** User plus system CPU time of a process in ms, from /proc; NaN where there is no /proc. */
export function processCpuMs(pid: number): number {
  try {
    // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
  } catch {
    return Number.NaN;
  }
}

/** A stopwatch of CPU time: this process's and another's (the dev server's), in ms since it started. */
export function cpuStopwatch(otherPid: number): () => { selfMs: number; otherMs: number } {
  const self = process.cpuUsage();
  const other = processCpuMs(otherPid);
  return () => {
    const used = process.cpuUsage(self);
    return { selfMs: (used.user + used.system) / 1000, otherMs: processCpuMs(otherPid) - other };
  };
}

/** Cores busy (this process and another's) over fixed windows: the mean, and the busiest tenth of the windows. */
export interface CoresBusy {
  mean: number;
  p90: number;
}

/**
 * Samples the CPU use of this process and another (the dev server) every `windowMs` until stopped: a run that is
 * light on average can still saturate the machine in bursts, and bursts are what its latency pays for.
 */
export function coresSampler(otherPid: number, windowMs = 100): () => CoresBusy {
  const windows: number[] = [];
  let last = { at: performance.now(), self: process.cpuUsage(), other: processCpuMs(otherPid) };
  const timer = setInterval(() => {
    const now = { at: performance.now(), self: process.cpuUsage(), other: processCpuMs(otherPid) };
    const selfMs = (now.self.user + now.self.system - last.self.user - last.self.system) / 1000;
    windows.push((selfMs + now.other - last.other) / (now.at - last.at));
    last = now;
  }, windowMs);
  return () => {
    clearInterval(timer);
    const sorted = windows.toSorted((a, b) => a - b);
    const mean = windows.reduce((a, b) => a + b, 0) / Math.max(windows.length, 1);
    return { mean, p90: sorted[Math.floor(sorted.length * 0.9)] ?? Number.NaN };
  };
}

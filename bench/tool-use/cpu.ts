/** CPU time of this process, of the Temporal dev server and of whole process trees, to tell work from waiting. */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on every common Linux build). */
const TICKS_PER_S = 100;

/** The fields of /proc/<pid>/stat after the command name, which is in parentheses and may hold spaces. */
const statFields = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');

/** User plus system CPU time of a process in ms, from /proc; NaN where there is no /proc. */
export function processCpuMs(pid: number): number {
  try {
    // utime and stime are the 12th and 13th fields after the name.
    const fields = statFields(pid);
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU time in ms of a process and every live descendant (user and system), each with what its children that exited
 * used (cutime, cstime): a command that runs its work in child processes is charged for all of it.
 */
export function treeCpuMs(root: number): number {
  const children = new Map<number, number[]>();
  const ticks = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fields: string[];
    try {
      fields = statFields(Number(entry));
    } catch {
      continue; // exited while listed
    }
    const siblings = children.get(Number(fields[1])) ?? [];
    siblings.push(Number(entry));
    children.set(Number(fields[1]), siblings);
    ticks.set(Number(entry), Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]));
  }
  let total = 0;
  for (const pending = [root]; pending.length > 0;) {
    const pid = pending.pop()!;
    total += ticks.get(pid) ?? 0;
    pending.push(...(children.get(pid) ?? []));
  }
  return (total * 1000) / TICKS_PER_S;
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

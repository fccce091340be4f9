import type { Timeline, TimelineStep } from './history-timeline.js';
import type { HarnessProgress } from '../activities/harness.js';
import type { HarnessSample } from './view/harness.js';

/** Fields of Clotho's activity inputs and results that the timeline shows; all optional, read defensively. */
interface StepData {
  turn?: number;
  sample?: number;
  call?: number;
  name?: string;
  arguments?: string;
  topK?: number;
  active?: number[];
  completionTokens?: number[];
  toolCalls?: { calls: unknown[] }[];
  outcome?: string;
  content?: string;
  scores?: number[];
  metrics?: Record<string, number>;
  tokens?: number;
  group?: { key?: string };
  /** finishGroup's assembled group; null when the group was dropped for equal scores. */
  assembled?: { tokens?: number; group?: { key?: string } } | null;
  /** runHarness's answer: model calls, how many replayed, divergences, the check, how the episode ended. */
  calls?: number;
  replayed?: number;
  diverged?: number;
  passed?: boolean;
  ended?: string;
  /** gatherHarness's: model calls of the group's longest rollout. */
  turns?: number;
}

/** Longest tool result or argument text shown on a timeline line. */
const PREVIEW = 80;

/** `12 ms`, `1.24 s`. */
export function duration(ms: number | null): string {
  if (ms === null) return 'running';
  return ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : `${(ms / 1000).toFixed(2)} s`;
}

const preview = (text: string, max = PREVIEW) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
};

const numbers = (values: readonly number[]) => values.map((v) => String(Number(v.toFixed(4)))).join(', ');
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * What a step did, in one line: `generateTurn turn 0: …`, `callTool add({"x":2}) sample 0 call 0 → ok: total 2`,
 * `scoreGroup: scores 1, -1`. `turn` is the episode's turn so far, for steps whose input the history lacks (local
 * activities).
 */
export function describeStep(step: TimelineStep, turn: number): string {
  const input = (step.input ?? {}) as StepData;
  const result = (step.result ?? {}) as StepData;
  const t = input.turn ?? turn;
  switch (step.activity) {
    case 'generateTurn': {
      if (step.result === undefined) return `generateTurn turn ${t}`;
      const tokens = (result.completionTokens ?? []).reduce((a, b) => a + b, 0);
      const calls = (result.toolCalls ?? []).reduce((n, c) => n + c.calls.length, 0);
      const active = result.active?.length ?? 0;
      return `generateTurn turn ${t}: ${plural(tokens, 'token')}, ${plural(calls, 'tool call')}, ${active} still active`;
    }
    case 'callTool': {
      const call = `callTool ${input.name ?? '?'}(${preview(input.arguments ?? '', PREVIEW)}) turn ${t} sample ${input.sample ?? '?'} call ${input.call ?? '?'}`;
      return result.outcome === undefined ? call : `${call} → ${result.outcome}: ${preview(result.content ?? '')}`;
    }
    case 'callTurnTools': {
      // A local activity: the history keeps its result, one entry per call.
      const calls = (step.result ?? []) as { name?: string; sample?: number; outcome?: string; content?: string }[];
      if (!Array.isArray(calls) || calls.length === 0) return `callTurnTools turn ${t}`;
      return `callTurnTools turn ${t}: ${calls.map((c) => `${c.name ?? '?'} sample ${c.sample ?? '?'} → ${c.outcome ?? '?'}: ${preview(c.content ?? '', 40)}`).join('; ')}`;
    }
    case 'stepTurn':
      return step.result === undefined ? `stepTurn turn ${t}` : `stepTurn turn ${t}: ${result.active?.length ?? 0} still active`;
    case 'scoreGroup':
      return result.scores ? `scoreGroup: ${scored(result)}` : 'scoreGroup';
    case 'finishGroup': {
      if (!result.scores) return 'finishGroup';
      const { assembled } = result;
      const to = assembled ? `${plural(assembled.tokens ?? 0, 'token')} → ${assembled.group?.key ?? '?'}` : 'dropped (scores all equal)';
      return `finishGroup: ${scored(result)}; ${to}`;
    }
    case 'teacherLogprobs':
      return input.topK === undefined ? 'teacherLogprobs' : `teacherLogprobs top ${input.topK}`;
    case 'runHarness': {
      const run = `runHarness sample ${input.sample ?? '?'}`;
      if (result.calls === undefined) return run;
      const parts = [
        `${plural(result.calls, 'model call')} (${result.replayed ?? 0} replayed)`,
        ...(result.ended && result.ended !== 'exited' ? [`ended: ${ENDED[result.ended] ?? result.ended}`] : []),
        ...(result.diverged ? [plural(result.diverged, 'divergence')] : []),
        `check ${result.passed ? 'passed' : 'failed'}`,
      ];
      return `${run}: ${parts.join(', ')}`;
    }
    case 'gatherHarness': {
      if (result.turns === undefined) return 'gatherHarness';
      const tokens = (result.completionTokens ?? []).reduce((a, b) => a + b, 0);
      return `gatherHarness: ${plural(result.completionTokens?.length ?? 0, 'rollout')}, up to ${plural(result.turns, 'model call')}, ${plural(tokens, 'completion token')}`;
    }
    case 'assembleGroup':
      return result.group?.key ? `assembleGroup: ${plural(result.tokens ?? 0, 'token')} → ${result.group.key}` : 'assembleGroup';
    default:
      return step.activity;
  }
}

/** `scores 1, -1 (metric 0.5, …)`. */
function scored(result: StepData): string {
  const metrics = Object.entries(result.metrics ?? {}).map(([k, v]) => `${k} ${Number(v.toFixed(4))}`);
  return `scores ${numbers(result.scores ?? [])}${metrics.length > 0 ? ` (${metrics.join(', ')})` : ''}`;
}

/** How a harness episode ended, in words (`HarnessEnd`). */
const ENDED: Record<string, string> = {
  exited: 'the agent exited',
  calls: 'its model calls were spent',
  tokens: 'its tokens were spent',
  time: 'out of time',
};

/** Where lines beneath a step start: under its description. */
const BENEATH = ' '.repeat(23);

/**
 * What a harness rollout did, one line per model call (`call 2 · live · 310 prompt + 42 completion tokens · 950 ms ·
 * user: <returncode>0</returncode> …`), then its outcome: the agent's exit, how the episode ended, the check, the
 * calls replayed and where a retried attempt diverged from the record. `progress` is a running attempt's heartbeat.
 */
export function harnessLines(sample: HarnessSample | null, progress?: HarnessProgress): string[] {
  const lines: string[] = [];
  if (progress && !sample?.outcome) {
    const last = progress.last === undefined ? '' : ` · last request ${progress.last}`;
    lines.push(`heartbeat: ${plural(progress.calls, 'model call')} so far (${progress.replayed} replayed)${last}`);
  }
  for (const c of sample?.calls ?? []) {
    const tokens = `${c.promptTokens} prompt + ${c.completionTokens} completion tokens`;
    lines.push(`call ${c.call} · ${c.mark} · ${tokens} · ${Math.round(c.modelMs)} ms · ${c.summary}`);
  }
  const outcome = sample?.outcome;
  if (!outcome) return lines;
  const exit = outcome.exitCode === null ? 'stopped' : `exit ${outcome.exitCode}`;
  const { check } = outcome;
  const checked = check.passed
    ? 'check passed'
    : `check failed (${check.timedOut ? 'timed out' : `exit ${check.exitCode ?? '?'}`})${lastLine(check.output)}`;
  lines.push(
    `outcome: agent ${outcome.agent} ${exit} · ended: ${ENDED[outcome.ended] ?? outcome.ended} · ${checked} · ${plural(outcome.calls, 'model call')}, ${outcome.replayed} replayed`,
  );
  for (const d of outcome.diverged) lines.push(`diverged at call ${d.call}: ${d.reason}`);
  return lines;
}

/** `: <the output's last line>`, or nothing when it printed nothing. */
function lastLine(output: string): string {
  const last = output.split('\n').findLast((line) => line.trim() !== '');
  return last === undefined ? '' : `: ${preview(last)}`;
}

/**
 * The timeline's lines: one per step (offset from the start, duration, what it did), retries and errors beneath, and
 * the lines `beneath` holds for the step (a harness rollout's model calls).
 */
export function formatSteps(timeline: Timeline, beneath?: ReadonlyMap<TimelineStep, readonly string[]>): string[] {
  const lines: string[] = [];
  let turn = -1;
  const pad = BENEATH;
  for (const step of timeline.steps) {
    if (step.activity === 'generateTurn') turn = (step.input as StepData | undefined)?.turn ?? turn + 1;
    const flags = [
      step.local ? 'local' : '',
      step.attempt > 1 ? `attempt ${step.attempt}` : '',
      step.status === 'completed' || step.status === 'running' ? '' : step.status.toUpperCase(),
    ].filter(Boolean);
    const offset = `+${(step.startMs / 1000).toFixed(3)}s`.padStart(10);
    lines.push(
      `${offset} ${duration(step.durationMs).padStart(10)}  ${describeStep(step, Math.max(0, turn))}${flags.length > 0 ? ` [${flags.join(', ')}]` : ''}`,
    );
    for (const retry of step.retries) lines.push(`${pad}retry: attempt ${retry.attempt} failed: ${retry.message}`);
    if (step.local && step.attempt > 1 && step.retries.length === 0) {
      lines.push(
        `${pad}retry: ${plural(step.attempt - 1, 'earlier attempt')} failed (a local activity's failures are not kept in the history)`,
      );
    }
    if (step.error) lines.push(`${pad}error: ${step.error}`);
    if (step.trace) lines.push(`${pad}traceback:`, ...step.trace.split('\n').map((line) => `${pad}  ${line}`));
    for (const line of beneath?.get(step) ?? []) lines.push(`${pad}${line}`);
  }
  return lines;
}

/** The workflow's outcome: `result: scored · scores 1, 1 · mean 1 · 3 turns · 10 tool calls`, or its failure. */
export function formatEnd(timeline: Timeline): string {
  const { end } = timeline;
  if (end.status === 'running') return 'result: still running';
  if (end.status !== 'completed') return `result: ${end.status}${end.error ? `: ${end.error}` : ''}`;
  const r = (end.result ?? {}) as {
    status?: string;
    dropReason?: string;
    /** Why an atroposRolloutGroup delivers nothing: Atropos's send filter's reason, or `declined`. */
    reason?: string;
    /** An atroposRolloutGroup's are per group it kept. */
    scores?: number[] | number[][];
    meanScore?: number;
    turns?: number;
    toolCalls?: number;
  };
  const parts = [
    `${r.status ?? 'completed'}${because(r.dropReason ?? r.reason)}`,
    ...(r.scores && r.scores.length > 0 ? [`scores ${numbers(r.scores.flat())}`] : []),
    ...(r.meanScore === undefined ? [] : [`mean ${Number(r.meanScore.toFixed(4))}`]),
    ...(r.turns === undefined ? [] : [plural(r.turns, 'turn')]),
    ...(r.toolCalls === undefined ? [] : [plural(r.toolCalls, 'tool call')]),
  ];
  return `result: ${parts.join(' · ')}`;
}

/** Why a group delivers nothing, in words: Clotho's drop reason, or Atropos's (its `declined` is no group at all). */
export function dropReasonText(reason: string): string {
  return reason === 'declined' ? 'collect_trajectories returned no group' : reason;
}

const because = (reason: string | undefined) => (reason ? ` (${dropReasonText(reason)})` : '');

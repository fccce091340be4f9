/**
 * Where a run's wall time outside inference goes, read off the scripted server's calls (issue 25): how long each
 * episode waited for its first call, how long each turn took beyond its call, and how long the run took to end after
 * its last answer. The same log serves the plain loop and Clotho, so the two are compared leg by leg.
 */
import type { Responder, ScriptedBody } from '../../test/support/scripted-openai.js';

/** A run's legs outside inference, in ms. */
export interface RunLegs {
  /** From the run's start to an episode's first call: the mean of the episodes, and the last episode's. */
  firstCall: { meanMs: number; lastMs: number };
  /** From one call of an episode to its next, beyond the call's own delay: the mean over every turn. */
  turnMs: number;
  /** From the last call's answer (its arrival plus its delay) to the run's end. */
  endMs: number;
}

/** A responder that logs when each episode's calls arrive, and the legs of a run from that log. */
export interface CallLog {
  responder: Responder;
  /** Forgets the calls logged so far: call before each run. */
  clear(): void;
  /** The legs of the run that just ended at `endMs` (performance.now()) after `wallMs`. */
  legs(endMs: number, wallMs: number): RunLegs;
}

/**
 * Logs the calls `responder` answers after `delayMs`, by episode: `episodeOf` reads the episode (item index) off a
 * request.
 */
export function logCalls(responder: Responder, delayMs: number, episodeOf: (body: ScriptedBody) => number): CallLog {
  const calls = new Map<number, number[]>();
  return {
    responder(body, callIndex) {
      const episode = episodeOf(body);
      (calls.get(episode) ?? calls.set(episode, []).get(episode)!).push(performance.now());
      return responder(body, callIndex);
    },
    clear: () => calls.clear(),
    legs(endMs, wallMs) {
      const startMs = endMs - wallMs;
      const firsts: number[] = [];
      const gaps: number[] = [];
      let lastCall = -Infinity;
      for (const times of calls.values()) {
        firsts.push(times[0]! - startMs);
        for (let i = 1; i < times.length; i++) gaps.push(times[i]! - times[i - 1]! - delayMs);
        lastCall = Math.max(lastCall, times.at(-1)!);
      }
      if (firsts.length === 0) throw new Error('no calls were logged for the run');
      const mean = (xs: number[]) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
      return {
        firstCall: { meanMs: mean(firsts), lastMs: Math.max(...firsts) },
        turnMs: mean(gaps),
        endMs: endMs - (lastCall + delayMs),
      };
    },
  };
}

import { z } from 'zod';
import type { CommandIo } from '../io.js';
import { dpoPairs, seededRandom } from '../training-data.js';
import { runTrainingDataCommand, type TrainingDataCommand } from '../training-data-command.js';
import { COMMON_HELP } from '../training-data-flags.js';

export const DPO_GEN_USAGE = `Usage: clotho dpo-gen <filepath> [options]

Writes preference pairs, as Atropos's atropos-dpo-gen does: from each scored group, chosen sequences from the highest
score down, each paired with a rejected one scoring lower by more than --minimum-score-diff-max-min, one JSONL line
per pair: {"prefix","pos","score","neg"} with --tokenizer, {"pos","score","neg"} (messages) otherwise; score is the
chosen one's. Reads groups as a trainer of \`clotho api\`, or offline from --from or --run.

Selection:
  --save-n-pairs-per-group <n>        at most n pairs per group; rejected ones come from the n lowest-scoring
                                      sequences, each used once (default 3)
  --minimum-score-diff-max-min <x>    a pair's scores must differ by more than x (default 0.5)
  --seed <n>                          seed of the random pick among a chosen sequence's rejected candidates
                                      (default: a new one each run)

Registered batch size is --group-size × 8, as Atropos's.

${COMMON_HELP}`;

const DPO_GEN: TrainingDataCommand = {
  command: 'dpo-gen',
  noun: 'pairs',
  minimumScoreDiffDefault: 0.5,
  ownFlags: {
    'save-n-pairs-per-group': { type: 'string', schema: z.coerce.number().int().min(0) },
    seed: { type: 'string', schema: z.coerce.number().int() },
  },
  batchSize: (_, groupSize) => groupSize * 8,
  selector(flags) {
    const seed = flags.own.seed as number | undefined;
    const random = seed === undefined ? Math.random : seededRandom(seed);
    const options = {
      nPairs: (flags.own['save-n-pairs-per-group'] as number | undefined) ?? 3,
      allowNegativeScores: flags.allowNegativeScores,
      minimumScoreDiff: flags.minimumScoreDiff,
    };
    return (group, view) => dpoPairs(group.scores, view, options, random);
  },
};

/** `clotho dpo-gen`: DPO pairs from scored groups, with Atropos's `atropos-dpo-gen` flags and line shapes. */
export function dpoGenCommand(argv: string[], io: CommandIo): Promise<number> {
  return runTrainingDataCommand(DPO_GEN, argv, io);
}

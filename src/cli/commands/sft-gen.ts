import { z } from 'zod';
import type { CommandIo } from '../io.js';
import { sftRecords } from '../training-data.js';
import { runTrainingDataCommand, type TrainingDataCommand } from '../training-data-command.js';
import { COMMON_HELP } from '../training-data-flags.js';

export const SFT_GEN_USAGE = `Usage: clotho sft-gen <filepath> [options]

Writes supervised fine-tuning data, as Atropos's atropos-sft-gen does: from each scored group, the best sequences,
highest score first, one JSONL line each: {"prefix","completion","score"} with --tokenizer, {"messages","score"}
otherwise. Reads groups as a trainer of \`clotho api\` (registers, then takes batches), or offline from a finished
run's JSONL (--from) or the trajectory store (--run).

Selection:
  --save-top-n-per-group <n>          at most n sequences per group (default 3)
  --minimum-score-diff-max-min <x>    when above 0, keep only sequences scoring more than x above the group's
                                      lowest score (default 0)
  --tasks-per-step <n>                registered batch size is --group-size × n (default 64)

${COMMON_HELP}`;

const SFT_GEN: TrainingDataCommand = {
  command: 'sft-gen',
  noun: 'sequences',
  minimumScoreDiffDefault: 0,
  ownFlags: {
    'save-top-n-per-group': { type: 'string', schema: z.coerce.number().int().min(0) },
    'tasks-per-step': { type: 'string', schema: z.coerce.number().int().min(1) },
  },
  batchSize: (flags, groupSize) => groupSize * ((flags.own['tasks-per-step'] as number | undefined) ?? 64),
  selector(flags) {
    const options = {
      topN: (flags.own['save-top-n-per-group'] as number | undefined) ?? 3,
      allowNegativeScores: flags.allowNegativeScores,
      minimumScoreDiff: flags.minimumScoreDiff,
    };
    return (group, view) => sftRecords(group.scores, view, options);
  },
};

/** `clotho sft-gen`: SFT records from scored groups, with Atropos's `atropos-sft-gen` flags and line shapes. */
export function sftGenCommand(argv: string[], io: CommandIo): Promise<number> {
  return runTrainingDataCommand(SFT_GEN, argv, io);
}

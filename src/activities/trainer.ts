/** What a trainer worker receives for one training step: the batch's id and its groups in the store. */
export interface TrainStepInput {
  batchId: string;
  /** The step this batch trains (Atropos's step counter when the batch was formed). */
  step: number;
  /** Store keys of the batch's groups; trainers elsewhere fetch the data with `GET /batch/{batchId}`. */
  groups: string[];
}

/**
 * The activity trainer workers implement on the trainer task queue (`clotho-trainer`), in any language
 * (clients/python has one). Completing it acknowledges the batch.
 */
export interface TrainerActivities {
  trainStep(input: TrainStepInput): Promise<void>;
}

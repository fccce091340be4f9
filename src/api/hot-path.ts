import { z } from 'zod';
import { ScoredDataPostSchema } from '../schema/api.js';
import { HOT_ROWS } from '../schema/scored-data.js';

/**
 * A faster first try at validating posted groups. A group of 8 × 2,048 tokens holds some 50,000 numbers in `tokens`,
 * `masks` and `inference_logprobs` alone: zod's check of each cost 2–3 ms of the API's one thread per post. Here those
 * per-token rows are checked by loops (`number-rows.ts`), everything else (and the rows' alignment) by the same zod
 * schema; `parseHotFirst` asks the full schema for anything the loops refuse.
 */

/** {@link ScoredDataPostSchema} with its per-token rows checked by loops; its refinements (alignment) kept. */
export const HotScoredDataPostSchema = ScoredDataPostSchema.safeExtend(HOT_ROWS);

/** `POST /scored_data_list`'s body, its groups as {@link HotScoredDataPostSchema}. */
export const HotScoredDataListPostSchema = z.array(HotScoredDataPostSchema);

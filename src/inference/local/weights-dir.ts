import { realpath, stat } from 'node:fs/promises';
import { resolve, sep } from 'node:path';

/**
 * Where `clotho inference` takes new weights from (`--weights-dir`): a trainer's `POST /v1/weights` names a file in
 * that folder, and every other path is refused with one answer, whether it exists or not, so the route tells nothing
 * of the machine's files.
 */

/** The answer to a swap on a server started without `--weights-dir`. */
export const NO_WEIGHTS_DIR =
  'this server takes no new weights: start clotho inference with --weights-dir <folder> (the folder the trainer writes its weights to)';

/** The one answer to every path that is not a file inside the weights folder. */
export const NOT_IN_WEIGHTS_DIR = 'path must name a file in the folder this server takes weights from (clotho inference --weights-dir)';

/**
 * The real path of `given` (absolute, or relative to `dir`) when it is a regular file inside `dir` once every link
 * is followed (a link inside that leads out is outside); undefined otherwise, whatever the reason.
 */
export async function fileInWeightsDir(dir: string, given: string): Promise<string | undefined> {
  try {
    const root = await realpath(dir);
    const real = await realpath(resolve(root, given));
    if (!real.startsWith(root + sep)) return undefined;
    return (await stat(real)).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

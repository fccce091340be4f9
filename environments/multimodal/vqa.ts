/**
 * VQAv2 questions in the layout the Hugging Face hub serves them (the features of `HuggingFaceM4/VQAv2`; the Parquet
 * files of `lmms-lab/VQAv2`): `question`, `multiple_choice_answer`, `answers` (the ten human answers, each
 * `{ answer, answer_confidence, answer_id }`), `question_id`, and the image either as the `datasets` Image column in
 * Parquet (`image: { bytes, path }`) or, in JSON lines, as an ImageFolder `metadata.jsonl` names it (`file_name`,
 * relative to the file).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { imageDataUrl, imageMediaType, loadTable, problemsError, tableFormatOf, z, type ItemSource } from 'clotho';

/** One question about one image, generated or loaded. */
export interface MultimodalItem {
  id: string;
  /** `count`, `color` or `position` for generated scenes; `vqa` for loaded questions. */
  task: string;
  question: string;
  /** The gold answer (VQAv2's `multiple_choice_answer`: the most common human answer). */
  answer: string;
  /** VQAv2's ten human answers, for its accuracy metric; empty for generated items. */
  answers: string[];
  /** The image as a base64 `data:` URL. */
  image: string;
}

const RowSchema = z.looseObject({
  question: z.string().min(1),
  multiple_choice_answer: z.string({ message: "no answer (VQAv2's test splits publish none: use validation)" }).min(1),
  answers: z.array(z.looseObject({ answer: z.string() })).nullish(),
  question_id: z.union([z.number(), z.bigint(), z.string()]).nullish(),
  image: z.looseObject({ bytes: z.instanceof(Uint8Array).nullish(), path: z.string().nullish() }).nullish(),
  file_name: z.string().nullish(),
});
type Row = z.infer<typeof RowSchema>;

/** Loads VQAv2 questions from a `.parquet` or `.jsonl` file; every row is checked, and every image found, at load. */
export async function loadVqa(path: string): Promise<ItemSource<MultimodalItem>> {
  const rows = await loadTable(path, { binary: true, format: tableFormatOf(path) });
  const folder = dirname(resolve(path));
  const problems: string[] = [];
  const items: (() => MultimodalItem)[] = [];
  rows.forEach((raw, i) => {
    const where = `${path}: row ${i + 1}`;
    const parsed = RowSchema.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) problems.push(`${where}: ${issue.path.join('.') || '(row)'}: ${issue.message}`);
      return;
    }
    const image = imageOf(parsed.data, folder);
    if (typeof image === 'string') problems.push(`${where}: ${image}`);
    else items.push(() => toItem(parsed.data, i, image()));
  });
  if (problems.length > 0) throw problemsError(`invalid VQA data in ${path}`, problems);
  if (items.length === 0) throw new Error(`no VQA questions in ${path}`);
  // Image files are read when their item is asked for: a split's images need not fit in memory at once.
  return { size: items.length, get: (index) => items[index]!() };
}

/** The image's `data:` URL maker, or what is wrong with the row's image. */
function imageOf(row: Row, folder: string): (() => string) | string {
  const bytes = row.image?.bytes;
  if (bytes && bytes.length > 0) {
    const type = imageMediaType(bytes);
    return type ? () => imageDataUrl(bytes, type) : 'image bytes are not a PNG, JPEG, GIF or WebP image';
  }
  const name = row.image?.path ?? row.file_name;
  if (!name) return 'no image: expected image.bytes, image.path or file_name';
  const file = isAbsolute(name) ? name : resolve(folder, name);
  if (!existsSync(file)) return `image file ${file} not found`;
  return () => imageDataUrl(readFileSync(file));
}

function toItem(row: Row, index: number, image: string): MultimodalItem {
  return {
    id: `vqa-${row.question_id ?? index}`,
    task: 'vqa',
    question: row.question,
    answer: row.multiple_choice_answer,
    answers: (row.answers ?? []).map((a) => a.answer),
    image,
  };
}

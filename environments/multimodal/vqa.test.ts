import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePng, imageDataUrl } from 'clotho';
import { humanAnswers, writeVqaParquet, type VqaRow } from './testing.js';
import { loadVqa } from './vqa.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'clotho-vqa-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const pixel = (r: number, g: number, b: number) => encodePng({ width: 1, height: 1, data: Uint8Array.from([r, g, b, 255]) });
const RED = pixel(255, 0, 0);
const BLUE = pixel(0, 0, 255);
// A JPEG's first bytes: the loader reads the media type from the signature and never decodes the image.
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46]);

const row = (overrides: Partial<VqaRow>): VqaRow => ({
  question_id: 262148000,
  image_id: 262148,
  question: 'What colour is it?',
  question_type: 'what color is the',
  answer_type: 'other',
  multiple_choice_answer: 'red',
  answers: humanAnswers({ red: 9, orange: 1 }),
  image: { bytes: RED, path: 'COCO_val2014_000000262148.jpg' },
  ...overrides,
});

describe('loadVqa', () => {
  it('reads the Parquet layout of lmms-lab/VQAv2: image bytes, or a path beside the file', async () => {
    await writeFile(join(dir, 'blue.png'), BLUE);
    const path = join(dir, 'validation-00000-of-00001.parquet');
    await writeVqaParquet(path, [
      row({}),
      row({
        question_id: 7,
        question: 'Is it blue?',
        answer_type: 'yes/no',
        multiple_choice_answer: 'yes',
        answers: humanAnswers({ yes: 10 }),
        image: { bytes: null, path: 'blue.png' },
      }),
      row({ question_id: 8, question: 'How many?', multiple_choice_answer: '2', image: { bytes: JPEG, path: 'x.jpg' } }),
    ]);
    const source = await loadVqa(path);
    expect(source.size).toBe(3);
    expect(source.get(0)).toEqual({
      id: 'vqa-262148000',
      task: 'vqa',
      question: 'What colour is it?',
      answer: 'red',
      answers: [...Array<string>(9).fill('red'), 'orange'],
      image: imageDataUrl(RED),
    });
    expect(source.get(1)).toMatchObject({ id: 'vqa-7', answer: 'yes', image: imageDataUrl(BLUE) });
    expect(source.get(2).image).toBe(`data:image/jpeg;base64,${JPEG.toString('base64')}`);
  });

  it('reads an ImageFolder metadata.jsonl, images named by file_name', async () => {
    const folder = await mkdtemp(join(dir, 'imagefolder-'));
    await writeFile(join(folder, 'red.png'), RED);
    const line = {
      file_name: 'red.png',
      question_id: 5,
      question: 'Colour?',
      multiple_choice_answer: 'red',
      answers: humanAnswers({ red: 10 }),
    };
    await writeFile(join(folder, 'metadata.jsonl'), `${JSON.stringify(line)}\n`);
    const source = await loadVqa(join(folder, 'metadata.jsonl'));
    expect(source.get(0)).toEqual({
      id: 'vqa-5',
      task: 'vqa',
      question: 'Colour?',
      answer: 'red',
      answers: Array<string>(10).fill('red'),
      image: imageDataUrl(RED),
    });
  });

  it('names every bad row at load: no answer (a test split), a missing image file, bytes that are not an image', async () => {
    const path = join(dir, 'test-00000-of-00001.parquet');
    await writeVqaParquet(path, [
      row({ multiple_choice_answer: null, answers: [] }),
      row({ image: { bytes: null, path: 'missing.jpg' } }),
      row({ image: { bytes: Buffer.from('not an image'), path: null } }),
      row({}),
    ]);
    const error = await loadVqa(path).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(error).toContain(`${path}: row 1: multiple_choice_answer: no answer (VQAv2's test splits publish none: use validation)`);
    expect(error).toContain(`${path}: row 2: image file ${join(dir, 'missing.jpg')} not found`);
    expect(error).toContain(`${path}: row 3: image bytes are not a PNG, JPEG, GIF or WebP image`);
    expect(error).not.toContain('row 4');
  });
});

import { describe, expect, it } from 'vitest';
import { decodeRecord, encodeRecord, jsonItems } from './records.js';

describe('W&B records', () => {
  it("encodes with wandb_internal.proto's field numbers", () => {
    // Record.num = 1, Record.history = 2; HistoryItem.key = 1, value_json = 16; HistoryRecord.step = 2, HistoryStep.num = 1.
    const history = encodeRecord({ num: 3, history: { item: [{ key: 'a', value_json: '1' }], step: { num: 2 } } });
    expect(Buffer.from(history).toString('hex')).toBe('0803' + '120d' + '0a07' + '0a0161' + '82010131' + '12020802');
    // Record.header = 21, Record.exit = 18 (RunExitRecord.exit_code = 1, runtime = 2), Record.final = 20.
    expect(Buffer.from(encodeRecord({ header: {} })).toString('hex')).toBe('aa0100');
    expect(Buffer.from(encodeRecord({ exit: { exit_code: 1, runtime: 5 } })).toString('hex')).toBe('920104' + '0801' + '1005');
    expect(Buffer.from(encodeRecord({ final: {} })).toString('hex')).toBe('a20100');
    // Record.run = 17: RunRecord.run_id = 1, project = 3, display_name = 8.
    expect(Buffer.from(encodeRecord({ run: { run_id: 'r', project: 'p', display_name: 'n' } })).toString('hex')).toBe(
      '8a0109' + '0a0172' + '1a0170' + '42016e',
    );
  });

  it('reads back what it wrote', () => {
    const record = { num: 7, summary: { update: jsonItems({ loss: 0.5, name: 'x' }) } };
    expect(decodeRecord(encodeRecord(record))).toMatchObject({
      num: 7,
      summary: {
        update: [
          { key: 'loss', value_json: '0.5' },
          { key: 'name', value_json: '"x"' },
        ],
      },
    });
  });
});

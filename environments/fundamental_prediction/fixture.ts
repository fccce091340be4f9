/**
 * Test fixture: a handful of made-up records in the data set's layout (companies and figures are invented), written
 * by the tests themselves as JSON lines or Parquet into a folder they own. Not used by the environment.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import type { FundamentalRecord } from './data.js';

const context = (lines: string[]) => lines.join('\n');

/** Six records, one per line of the fixture file, in this order. */
export const FIXTURE_RECORDS: FundamentalRecord[] = [
  {
    context: context([
      'Company: Northwind Freight Corp. (NWFC), Industrials / Trucking',
      'Quarterly revenue ($M): Q1 812.4, Q2 835.9, Q3 851.2, Q4 868.0',
      'Gross margin: 21.4% -> 22.1%; operating margin 8.9%',
      'News: signed a five-year dedicated-fleet contract with a national grocer; diesel prices down 6% quarter on quarter.',
      'Macro: ISM manufacturing PMI 51.2; retail sales +0.6% m/m; 10-year Treasury 4.1%.',
    ]),
    answer: 'raised',
    magnitude: '4.5',
    fundamental_metric: 'revenue',
  },
  {
    context: context([
      'Company: Halcyon Therapeutics Inc. (HLCY), Health Care / Pharmaceuticals',
      'Diluted EPS: Q1 1.42, Q2 1.38, Q3 1.35, Q4 1.31',
      'R&D expense up 18% year on year; patent on lead product expires next quarter.',
      'News: two generic entrants approved for its best-selling drug; a phase III readout was delayed.',
      'Macro: CPI +3.1% y/y; Fed funds 5.25-5.50%.',
    ]),
    answer: 'reduced',
    magnitude: '12.3',
    fundamental_metric: 'earnings per share',
  },
  {
    context: context([
      'Company: Cascade Water Utilities (CWU), Utilities / Water',
      'Quarterly dividend per share: 0.52 for the last eight quarters',
      'Payout ratio 64%; rate case pending before the state commission, decision expected in two quarters.',
      'News: management reiterated its capital plan; no change to guidance.',
      'Macro: 10-year Treasury 4.3%; utilities sector flat over the quarter.',
    ]),
    answer: 'maintained',
    magnitude: '0',
    fundamental_metric: 'dividend per share',
  },
  {
    context: context([
      'Company: Meridian Semiconductor Ltd. (MRSC), Information Technology / Semiconductors',
      'Capital expenditure guidance ($B): FY 4.0 (set in Q1), 4.2 (raised in Q2)',
      'Fab utilisation 93%; book-to-bill 1.18.',
      'News: hyperscale customers expanded AI accelerator orders; new packaging line under construction.',
      'Macro: global semiconductor sales +14% y/y; export controls unchanged.',
    ]),
    answer: 'raised',
    magnitude: '9.5',
    fundamental_metric: 'capital expenditure guidance',
  },
  {
    context: context([
      'Company: Bramble & Finch Retail Group (BFRG), Consumer Discretionary / Apparel Retail',
      'Gross margin: Q1 41.8%, Q2 40.9%, Q3 39.7%',
      'Inventory up 22% year on year; markdown rate rising.',
      'News: announced a clearance event for the holiday season; freight costs normalising.',
      'Macro: consumer confidence index 98.3 (from 102.0); unemployment 4.0%.',
    ]),
    answer: 'reduced',
    magnitude: '3.2',
    fundamental_metric: 'gross margin',
  },
  {
    context: context([
      'Company: Pinecrest Regional Bancorp (PRB), Financials / Regional Banks',
      'Net interest margin: Q1 3.21%, Q2 3.19%, Q3 3.20%',
      'Deposit costs stabilised; loan growth 1.1% quarter on quarter.',
      'News: no change to the buyback programme; credit quality steady, net charge-offs 0.22%.',
      'Macro: yield curve flat; Fed expected to hold rates.',
    ]),
    answer: 'maintained',
    magnitude: '0',
    fundamental_metric: 'net interest margin',
  },
];

/** Writes the records (default: the fixture's) as `records.<format>` into `dir`; returns the path. */
export async function writeFixture(dir: string, format: 'jsonl' | 'parquet', records = FIXTURE_RECORDS): Promise<string> {
  const path = join(dir, `records.${format}`);
  if (format === 'jsonl') {
    await writeFile(path, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
    return path;
  }
  const columns = ['context', 'answer', 'magnitude', 'fundamental_metric'] as const;
  const buffer = parquetWriteBuffer({ columnData: columns.map((name) => ({ name, data: records.map((r) => r[name]) })) });
  await writeFile(path, Buffer.from(buffer));
  return path;
}

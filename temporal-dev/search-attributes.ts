import type { Connection } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes.js';

/** Search attribute types as the `temporal` CLI spells them (`--search-attribute Name=Type`). */
export type CliSearchAttributeType = 'Text' | 'Keyword' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

/**
 * Search attributes Clotho sets on its workflows, so runs can be filtered in the Temporal UI
 * (`ClothoRunId = "run-1" AND ClothoStatus = "failed"`). Registered on every server Clotho starts or reuses.
 */
export const CLOTHO_SEARCH_ATTRIBUTES = {
  ClothoEnvironment: 'Keyword',
  ClothoRunId: 'Keyword',
  ClothoItemIndex: 'Int',
  ClothoStatus: 'Keyword',
  ClothoMeanScore: 'Double',
  ClothoTurns: 'Int',
  ClothoToolCalls: 'Int',
  ClothoVersion: 'Keyword',
} as const satisfies Record<string, CliSearchAttributeType>;

const SDK_TYPE = {
  Text: 'TEXT',
  Keyword: 'KEYWORD',
  Int: 'INT',
  Double: 'DOUBLE',
  Bool: 'BOOL',
  Datetime: 'DATETIME',
  KeywordList: 'KEYWORD_LIST',
} as const satisfies Record<CliSearchAttributeType, string>;

/** The proto enum value of a CLI-spelled type, as the operator service expects it. */
function indexedValueType(type: CliSearchAttributeType) {
  const value = encodeSearchAttributeIndexedValueType(SDK_TYPE[type]);
  if (value === undefined) throw new Error(`unknown search attribute type ${type}`);
  return value;
}

/** Custom search attributes registered in `namespace`, as name → proto enum value. */
export async function listCustomSearchAttributes(connection: Connection, namespace: string): Promise<Map<string, number>> {
  const response = await connection.operatorService.listSearchAttributes({ namespace });
  return new Map(Object.entries(response.customAttributes ?? {}).map(([name, type]) => [name, Number(type)]));
}

/**
 * Adds the attributes missing from `namespace` and waits until the server lists them; returns the names
 * it added. An attribute already registered with another type is an error: Temporal cannot change it.
 * @param attributes @default CLOTHO_SEARCH_ATTRIBUTES
 */
export async function ensureSearchAttributes(
  connection: Connection,
  namespace: string,
  attributes: Readonly<Record<string, CliSearchAttributeType>> = CLOTHO_SEARCH_ATTRIBUTES,
  timeoutMs = 30_000,
): Promise<string[]> {
  const missing = await missingAttributes(connection, namespace, attributes);
  if (missing.length === 0) return [];
  const searchAttributes = Object.fromEntries(missing.map((name) => [name, indexedValueType(attributes[name]!)]));
  await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  const deadline = Date.now() + timeoutMs;
  while ((await missingAttributes(connection, namespace, attributes)).length > 0) {
    if (Date.now() > deadline) throw new Error(`search attributes ${missing.join(', ')} not visible in ${namespace} after ${timeoutMs} ms`);
    await new Promise((done) => setTimeout(done, 200));
  }
  return missing;
}

async function missingAttributes(
  connection: Connection,
  namespace: string,
  attributes: Readonly<Record<string, CliSearchAttributeType>>,
): Promise<string[]> {
  const registered = await listCustomSearchAttributes(connection, namespace);
  const missing: string[] = [];
  for (const [name, type] of Object.entries(attributes)) {
    const existing = registered.get(name);
    if (existing === undefined) missing.push(name);
    else if (existing !== indexedValueType(type)) {
      throw new Error(
        `search attribute ${name} exists in ${namespace} with another type (wanted ${type}); Temporal cannot change its type`,
      );
    }
  }
  return missing;
}

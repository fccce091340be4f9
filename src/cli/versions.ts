import { CLOTHO_VERSION } from '../version.js';
import { VERSION, VERSION_MEMO } from '../workflows/search-attributes.js';

/**
 * What every workflow Clotho starts carries (ARCHITECTURE.md, "Replay and patches"): the Clotho version in its memo,
 * and as the `ClothoVersion` search attribute where the cluster has Clotho's search attributes.
 */
export function startedBy(searchAttributes: boolean) {
  return {
    memo: { [VERSION_MEMO]: CLOTHO_VERSION },
    ...(searchAttributes ? { typedSearchAttributes: [{ key: VERSION, value: CLOTHO_VERSION }] } : {}),
  };
}

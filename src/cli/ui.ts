import type { TemporalEndpoint } from '../../temporal-dev/index.js';

/** The Temporal UI's list of a run's rollouts, when the UI's address is known. */
export function rolloutsUiUrl(endpoint: TemporalEndpoint, runId: string): string | undefined {
  if (!endpoint.uiUrl) return undefined;
  const query = encodeURIComponent(`ClothoRunId = "${runId}"`);
  return `${endpoint.uiUrl}/namespaces/${endpoint.namespace}/workflows?query=${query}`;
}

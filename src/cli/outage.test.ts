import { describe, expect, it } from 'vitest';
import type { ServerStatus } from '../inference/server-manager.js';
import { outageNote } from './outage.js';

const server = (baseUrl: string, downSince?: number): ServerStatus => ({
  baseUrl,
  healthy: downSince === undefined,
  ...(downSince === undefined ? {} : { downSince }),
  nIgnored: false,
  inFlight: { train: 0, eval: 0 },
  limits: { train: 8, eval: 8 },
});

describe('outageNote', () => {
  it('is empty while every server is up', () => {
    expect(outageNote([server('http://a/v1'), server('http://b/v1')], 4, 10_000)).toBe('');
  });

  it('names the server that is down, for how long, and the groups waiting when none is up', () => {
    expect(outageNote([server('http://a/v1', 0)], 12, 40_400)).toBe('inference server http://a/v1 unreachable for 40 s, 12 groups waiting');
    expect(outageNote([server('http://a/v1', 0)], 1, 1_000)).toBe('inference server http://a/v1 unreachable for 1 s, 1 group waiting');
  });

  it('names only the servers down, and no waiting groups while another server takes their calls', () => {
    const servers = [server('http://a/v1', 5_000), server('http://b/v1'), server('http://c/v1', 2_000)];
    expect(outageNote(servers, 3, 12_000)).toBe('inference servers http://a/v1, http://c/v1 unreachable for 10 s');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApi } from '../../api/app.js';
import { startApiServer, type RunningApiServer } from '../../api/server.js';
import { ScoredDataGroupSchema } from '../../schema/scored-data.js';
import { FakeTrajectoryService, sampleGroup } from '../../../test/support/fake-trajectory-service.js';
import { apiSource } from './api-source.js';

const TOKEN = 'view-token';
let service: FakeTrajectoryService;
let server: RunningApiServer;

/** Group `i`: two rollouts whose answers name it. */
const posted = (i: number) =>
  ScoredDataGroupSchema.parse({
    ...sampleGroup(2, 3),
    messages: [0, 1].map((s) => [
      { role: 'user', content: `Q${i}` },
      { role: 'assistant', content: `A${i}.${s}` },
    ]),
  });

beforeAll(async () => {
  service = new FakeTrajectoryService();
  // More groups than one GET /queue page holds (200).
  await service.ingestGroups(Array.from({ length: 250 }, (_, i) => ({ group: posted(i), idempotencyKey: `g${i}`, policyVersion: 7 })));
  server = await startApiServer({ app: createApi({ service, options: { token: TOKEN } }), host: '127.0.0.1', port: 0 });
});
afterAll(() => server?.close());

describe("the viewer's source for a running clotho api", () => {
  it('reads every waiting group, page after page, and takes none of them from the trainer', async () => {
    const source = apiSource(`${server.url}/`, { id: 'api', token: TOKEN });
    const { groups, notices } = await source.load();
    expect(notices).toEqual([]);
    expect(groups.map((g) => g.id)).toEqual(Array.from({ length: 250 }, (_, i) => `g${i}`));
    expect(groups[249]).toMatchObject({ status: 'scored', prompt: 'Q249', address: null });
    expect(groups[249]!.label).toMatch(/^g249 · no env · policy 7 · received \d\d:\d\d:\d\d UTC$/);
    expect((await source.group('g3'))?.messages[1]?.[1]?.content).toBe('A3.1');
    expect(service.queue).toHaveLength(250);
  });

  it('says what went wrong instead of failing: a missing token, an API that is not there', async () => {
    expect((await apiSource(server.url, { id: 'api' }).load()).notices).toEqual([expect.stringContaining('--token')]);
    const gone = await startApiServer({ app: createApi({ service }), host: '127.0.0.1', port: 0 });
    await gone.close();
    const { groups, notices } = await apiSource(gone.url, { id: 'api' }).load();
    expect(groups).toEqual([]);
    expect(notices).toEqual([expect.stringMatching(new RegExp(`^${gone.url}: `))]);
  });
});

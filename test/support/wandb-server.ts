import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the W&B SDK made: path, Authorization header and JSON body. */
export interface WandbRequest {
  path: string;
  authorization?: string;
  body: Record<string, unknown>;
}

export interface RecordingWandbServer {
  url: string;
  requests: WandbRequest[];
  /** The history rows the SDK streamed, parsed, in order. */
  history(): Record<string, unknown>[];
  /** The `upsertBucket` mutations' variables. */
  upserts(): Record<string, unknown>[];
  close(): Promise<void>;
}

/**
 * A stand-in for W&B's API that records what the JavaScript SDK sends and answers just enough for it to go on:
 * GraphQL `viewer` (the default entity) and `upsertBucket` (the run), and the run's `file_stream` posts.
 */
export async function startRecordingWandbServer(entity = 'tester'): Promise<RecordingWandbServer> {
  const requests: WandbRequest[] = [];
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
      requests.push({ path: request.url ?? '', authorization: request.headers.authorization, body });
      response.setHeader('content-type', 'application/json');
      if (request.url === '/graphql' && body.operationName === 'Viewer') {
        response.end(JSON.stringify({ data: { viewer: { id: 'v1', entity, flags: '{}', teams: { edges: [] } } } }));
      } else if (request.url === '/graphql' && body.operationName === 'UpsertBucket') {
        const v = body.variables as Record<string, string>;
        const project = { id: 'p1', name: v.project, entity: { id: 'e1', name: entity } };
        response.end(
          JSON.stringify({
            data: { upsertBucket: { bucket: { id: 'b1', name: v.name, displayName: v.displayName, project }, inserted: true } },
          }),
        );
      } else response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const fileStreams = () => requests.filter((r) => r.path.endsWith('/file_stream'));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    history: () =>
      fileStreams().flatMap((r) => {
        const files = r.body.files as Record<string, { content: string[] }> | undefined;
        return (files?.['wandb-history.jsonl']?.content ?? []).map((line) => JSON.parse(line) as Record<string, unknown>);
      }),
    upserts: () => requests.filter((r) => r.body.operationName === 'UpsertBucket').map((r) => r.body.variables as Record<string, unknown>),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

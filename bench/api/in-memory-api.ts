/**
 * The in-memory baseline of bench/api as a process of its own, as `clotho api` and Atropos's `run-api` are: Clotho's
 * HTTP app in front of an in-memory service that keeps state the way Atropos does (lost on a crash).
 * Prints `listening on <url>` and serves until SIGTERM.
 */
import { createApi } from '../../src/api/app.js';
import { startApiServer } from '../../src/api/server.js';
import { FakeTrajectoryService } from '../../test/support/fake-trajectory-service.js';

const server = await startApiServer({ app: createApi({ service: new FakeTrajectoryService() }), host: '127.0.0.1', port: 0 });
console.log(`listening on ${server.url}`);
process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));

import { afterEach } from 'vitest';
import { startScriptedOpenAI, type ScriptedOpenAI, type ScriptedOpenAIOptions } from './scripted-openai.js';

/** For a test file: a function that starts scripted servers, each closed after the test that started it. */
export function scriptedServers(): (options?: ScriptedOpenAIOptions) => Promise<ScriptedOpenAI> {
  const servers: ScriptedOpenAI[] = [];
  afterEach(async () => {
    // A test may have closed its server already (to see it gone); closing twice is no failure.
    await Promise.all(servers.splice(0).map((s) => s.close().catch(() => undefined)));
  });
  return async (options = {}) => {
    const server = await startScriptedOpenAI(options);
    servers.push(server);
    return server;
  };
}

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';

/** A listening API server. */
export interface RunningApiServer {
  /** Base URL with the port actually bound (useful with port 0). */
  url: string;
  /** Stops accepting connections, drops idle keep-alive ones and resolves once closed. */
  close(): Promise<void>;
}

/** Serves `app` over HTTP on `host:port` (port 0 picks a free port); resolves once listening. */
export function startApiServer({ app, host, port }: { app: Hono; host: string; port: number }): Promise<RunningApiServer> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port }, (info: AddressInfo) => {
      server.off('error', reject);
      const shown = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      const close = () =>
        new Promise<void>((done, fail) => {
          server.close((error) => (error ? fail(error) : done()));
          // Keep-alive sockets would otherwise hold close() open until they time out.
          (server as Server).closeIdleConnections();
        });
      resolve({ url: `http://${shown}:${info.port}`, close });
    });
    server.once('error', reject);
  });
}

import { connect, createServer, type Socket } from 'node:net';

/** A TCP relay a test can cut. */
export interface TcpProxy {
  /** `127.0.0.1:<port>`: connect here instead of the target. */
  address: string;
  /** A network partition: every open connection dropped, new ones refused (the port no longer listens). */
  cut(): void;
}

/** Relays connections on a free local port to `target` (`host:port`), until {@link TcpProxy.cut}. */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((client) => {
    const upstream = connect(port, host);
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as { port: number }).port}`,
    cut() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

"""Relays 127.0.0.1:<port> inside a sandbox to a Unix socket bound in from the host: the agent's one way out.

Usage: python3 loopback-forward.py <socket> <port>. The parent exits once the port listens (so a launcher can
start the agent right after it); a child process relays until the sandbox ends.
"""

import os
import socket
import sys
import threading


def pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (source, target):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def relay(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    pipe(upstream, client)
    client.close()
    upstream.close()


def main() -> None:
    path, port = sys.argv[1], int(sys.argv[2])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    for fd in (0, 1, 2):
        os.close(fd)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=relay, args=(client, path), daemon=True).start()


if __name__ == "__main__":
    main()

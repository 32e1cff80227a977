import { connect, createServer, type Server, type Socket } from 'node:net';
import { listen } from '../../services/shared/listen.ts';

/**
 * A TCP link to a server that can be cut the way a failed network cuts it: while cut, it
 * accepts connections and keeps the open ones, but every byte either way is dropped, so
 * the peers see silence (no FIN, no RST) until their own time-outs. Restored, it forwards
 * again (streams cut mid-way stay broken; new connections work).
 */
export class CuttableLink {
  readonly port: number;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #cut = false;

  private constructor(server: Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  static async to(targetPort: number, host = '127.0.0.1'): Promise<CuttableLink> {
    let link: CuttableLink | undefined;
    const server = createServer((client) => link!.#accept(client, targetPort, host));
    const port = await listen(server, 0, host);
    link = new CuttableLink(server, port);
    return link;
  }

  cut(): void {
    this.#cut = true;
  }

  restore(): void {
    this.#cut = false;
  }

  destroy(): void {
    this.#server.close();
    for (const s of this.#sockets) s.destroy();
  }

  #accept(client: Socket, targetPort: number, host: string): void {
    const upstream = connect({ port: targetPort, host });
    for (const s of [client, upstream]) {
      this.#sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => this.#sockets.delete(s));
    }
    client.on('data', (chunk) => {
      if (!this.#cut) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!this.#cut) client.write(chunk);
    });
    // An end of either side passes through only while the link is up.
    client.on('end', () => !this.#cut && upstream.end());
    upstream.on('end', () => !this.#cut && client.end());
  }
}

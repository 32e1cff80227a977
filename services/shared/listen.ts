import type { AddressInfo, Server as NetServer } from 'node:net';

/** Listens and resolves with the bound port (useful with port 0), rejecting on bind errors. */
export function listen(server: NetServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

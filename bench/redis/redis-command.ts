import { connect } from 'node:net';

/** One RESP inline command to Redis on a fresh connection; resolves with the raw reply text. */
export function redisCommand(port: number, command: string): Promise<string> {
  return new Promise((resolveReply, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (c: Buffer) => {
      reply += c.toString();
      const m = /^\$(\d+)\r\n/.exec(reply);
      const complete = m ? reply.length >= m[0].length + Number(m[1]) + 2 : reply.includes('\r\n');
      if (complete) {
        socket.destroy();
        resolveReply(reply);
      }
    });
    socket.on('error', reject);
  });
}

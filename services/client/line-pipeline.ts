import type { Socket } from 'node:net';

export interface LinePipelineOptions {
  /** Lines per write. */
  readonly batch: number;
  /** Writes in flight: the next goes out once a batch's worth has been answered (default 2). */
  readonly writesInFlight?: number;
  /** Called for each reply. */
  readonly onReply?: () => void;
}

/**
 * Sends protocol lines over a connected socket the way a pipelining client does: `batch`
 * lines per write, `writesInFlight` writes in flight, and resolves once every line sent has
 * its reply (`batch` 1 with one write in flight is a client that waits for each reply). A
 * reply is one LF-terminated line; they are counted, not read. For loads that need no
 * reply's content: the store's start-up warm-up, and the benches' loaders. Rejects if the
 * socket fails or closes first.
 */
export function pipelineLines(socket: Socket, nextLine: () => string | undefined, { batch, writesInFlight = 2, onReply }: LinePipelineOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    let outstanding = 0;
    let more = true;
    const done = (err?: Error): void => {
      socket.off('data', onData);
      socket.off('error', done);
      socket.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onClose = (): void => done(new Error(`the connection closed with ${outstanding} replies outstanding`));
    const send = (): void => {
      let text = '';
      let n = 0;
      while (n < batch && more) {
        const line = nextLine();
        if (line === undefined) {
          more = false;
        } else {
          text += line;
          n++;
        }
      }
      if (n === 0) return;
      outstanding += n;
      socket.write(text);
    };
    function onData(chunk: Buffer): void {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) {
        outstanding--;
        onReply?.();
      }
      if (outstanding <= batch * (writesInFlight - 1)) send();
      if (outstanding === 0 && !more) done();
    }
    socket.on('data', onData);
    socket.on('error', done);
    socket.on('close', onClose);
    for (let i = 0; i < writesInFlight; i++) send();
    if (outstanding === 0 && !more) done();
  });
}

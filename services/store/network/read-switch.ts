import type { Socket } from 'node:net';

/**
 * Reading on and off for one client socket, whoever reads it (Node's stream, or the native
 * poller: native-client-socket.ts). The implementations are classes, not object literals with a
 * getter: a literal's getter is a closure of its own, which puts every such object in
 * dictionary mode, and `paused`, read twice a turn per connection, then took V8's generic
 * property lookup (~24 against ~2 ns, microbenchmark).
 */
export interface ReadSwitch {
  readonly paused: boolean;
  pause(): void;
  resume(): void;
}

/** A socket read by Node: its stream's own pause and resume. */
export class StreamReadSwitch implements ReadSwitch {
  readonly #socket: Socket;

  constructor(socket: Socket) {
    this.#socket = socket;
  }

  get paused(): boolean {
    return this.#socket.isPaused();
  }

  pause(): void {
    this.#socket.pause();
  }

  resume(): void {
    this.#socket.resume();
  }
}

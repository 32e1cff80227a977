import type { Socket } from 'node:net';

/** Reading on and off for one client socket, whoever reads it (Node's stream, or the native poller: native-io.ts). */
export interface ReadSwitch {
  readonly paused: boolean;
  pause(): void;
  resume(): void;
}

/** A socket read by Node: its stream's own pause and resume. */
export function streamReadSwitch(socket: Socket): ReadSwitch {
  return {
    get paused() {
      return socket.isPaused();
    },
    pause: () => void socket.pause(),
    resume: () => void socket.resume(),
  };
}

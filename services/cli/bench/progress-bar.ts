import type { BenchPhaseInfo } from './bench-runner.ts';

const WIDTH = 20;
const TICK_MS = 200;
/** Runs shorter than this draw nothing. */
const SHOW_AFTER_MS = 1000;

/**
 * A one-line progress bar on a terminal stream (stderr), redrawn with `\r`: phase,
 * bar, replies and the current rate. Drawn only once the run has lasted a second,
 * so short runs and pipes stay clean; cleared before the report is printed.
 */
export class ProgressBar {
  readonly #stream: NodeJS.WritableStream & { columns?: number };
  readonly #startedAt = performance.now();
  #phase: BenchPhaseInfo | undefined;
  #phaseStartedAt = 0;
  #lastDone = 0;
  #lastAt = 0;
  #rate = 0;
  #drawn = false;
  readonly #timer: NodeJS.Timeout;

  constructor(stream: NodeJS.WritableStream & { columns?: number }) {
    this.#stream = stream;
    this.#timer = setInterval(() => this.#draw(), TICK_MS);
    this.#timer.unref();
  }

  phase(info: BenchPhaseInfo): void {
    this.#phase = info;
    this.#phaseStartedAt = this.#lastAt = performance.now();
    this.#lastDone = 0;
    this.#rate = 0;
  }

  #draw(): void {
    const now = performance.now();
    const p = this.#phase;
    if (!p || now - this.#startedAt < SHOW_AFTER_MS) return;
    const done = p.done();
    const dt = (now - this.#lastAt) / 1000;
    if (dt > 0) this.#rate = this.#rate ? 0.5 * this.#rate + 0.5 * ((done - this.#lastDone) / dt) : (done - this.#lastDone) / dt;
    this.#lastDone = done;
    this.#lastAt = now;
    let fraction: number | undefined;
    if (p.requests !== undefined && p.requests > 0) fraction = done / p.requests;
    else if (p.seconds !== undefined) fraction = (now - this.#phaseStartedAt) / 1000 / p.seconds;
    const f = Math.min(1, Math.max(0, fraction ?? 0));
    const filled = Math.round(f * WIDTH);
    const bar = fraction === undefined ? '' : `[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${String(Math.floor(f * 100)).padStart(3)}% `;
    const line = `${p.name.padEnd(8)}${bar}${done.toLocaleString('en-US')} replies  ${Math.round(this.#rate).toLocaleString('en-US')} ops/s`;
    const columns = this.#stream.columns ?? 80;
    this.#stream.write(`\r${line.slice(0, columns - 1)}\x1b[K`);
    this.#drawn = true;
  }

  stop(): void {
    clearInterval(this.#timer);
    if (this.#drawn) this.#stream.write('\r\x1b[K');
  }
}

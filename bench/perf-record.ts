// One `perf record` run in the background, for the bench's tracers (turn-trace.ts,
// thread-steal.ts): started and waited on until it records, then stopped and read back
// with `perf script`. Linux; root, or a perf_event_paranoid that allows tracepoints.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

/** Why `perf` cannot record tracepoint `event` (e.g. sched:sched_switch) here, or undefined when it can. */
export function perfTracepointUnavailable(event: string): string | undefined {
  const r = spawnSync('perf', ['list', event], { encoding: 'utf8' });
  if (r.error !== undefined) return `perf is not on PATH (${r.error.message})`;
  if (!r.stdout.includes(event.split(':').pop()!)) return `perf sees no ${event} tracepoint (tracefs not mounted, or not root)`;
  return undefined;
}

/** A line of `perf script -F tid,cpu,time,event,trace`: tid, cpu, seconds, event, its fields. */
export const TRACE_LINE = /^\s*(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(\S+):(?:\s(.*))?$/;

export interface PerfRecording {
  /** Stops recording and returns `perf script -F <fields>` of what it recorded, as lines. */
  stop(fields: string): Promise<string[]>;
}

/** Starts `perf record <args>` (its output file is this module's); resolves once its events are on. */
export async function startPerfRecord(args: readonly string[]): Promise<PerfRecording> {
  const dir = mkdtempSync(join(tmpdir(), 'perf-record-'));
  const file = join(dir, 'perf.data');
  // Started with its events off (-D -1) and turned on through its control descriptors (3 in,
  // 4 for the acknowledgement): perf writes its file's header before every CPU's events are
  // open, and answers "ack" only once they are, so the trace covers all that follows.
  const perf: ChildProcess = spawn('perf', ['record', '-q', '-o', file, '-D', '-1', '--control', 'fd:3,4', ...args], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  let stderr = '';
  perf.stderr!.on('data', (d: Buffer) => void (stderr += d.toString()));
  const exited = once(perf, 'exit');
  try {
    await new Promise<void>((resolve, reject) => {
      let acks = '';
      const timer = setTimeout(() => reject(new Error(`perf record had not started after 10 s: ${stderr.trim()}`)), 10_000);
      const onExit = (): void => done(new Error(`perf record exited at once: ${stderr.trim()}`));
      const done = (err?: Error): void => {
        clearTimeout(timer);
        perf.off('exit', onExit); // from here on, stop() waits for the exit
        if (err === undefined) resolve();
        else reject(err);
      };
      perf.once('exit', onExit);
      (perf.stdio[4] as Readable).on('data', (d: Buffer) => void ((acks += d.toString()).includes('ack') && done()));
      (perf.stdio[3] as Writable).write('enable\n');
    });
  } catch (err) {
    perf.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    async stop(fields: string): Promise<string[]> {
      try {
        perf.kill('SIGINT');
        await exited;
        const script = spawnSync('perf', ['script', '-i', file, '-F', fields], { encoding: 'utf8', maxBuffer: 1 << 30 });
        if (script.status !== 0) throw new Error(`perf script failed: ${script.stderr.trim() || stderr.trim()}`);
        return script.stdout.split('\n');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

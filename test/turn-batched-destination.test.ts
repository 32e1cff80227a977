// The services' default log destination: a turn's lines reach SonicBoom as one string,
// in order, and nothing is lost on flush, flushSync or an abrupt process.exit.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../services/shared/logger.ts';
import { TurnBatchedDestination } from '../services/shared/turn-batched-destination.ts';
import { nextTurn } from './helpers/wait-until.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A SonicBoom writing synchronously to a fresh file, with every write it receives recorded. */
function recordingTarget(): { target: ReturnType<typeof pino.destination>; file: string; writes: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'kvstack-log-'));
  dirs.push(dir);
  const file = join(dir, 'out.log');
  const target = pino.destination({ dest: file, sync: true });
  const writes: string[] = [];
  const write = target.write.bind(target);
  target.write = (data: string) => {
    writes.push(data);
    return write(data);
  };
  return { target, file, writes };
}


describe('TurnBatchedDestination', () => {
  it("hands over a turn's lines as one write, in order, once the turn is over", async () => {
    const { target, file, writes } = recordingTarget();
    const destination = new TurnBatchedDestination(target);
    for (let i = 0; i < 50; i++) destination.write(`{"n":${i}}\n`);
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toHaveLength(1);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { n: number }).n)).toEqual([...Array(50).keys()]);

    destination.write('{"n":50}\n');
    await nextTurn();
    expect(writes).toEqual([expect.any(String), '{"n":50}\n']);
  });

  it('flushSync and flush hand over what is pending at once', async () => {
    const { target, file } = recordingTarget();
    const destination = new TurnBatchedDestination(target);
    destination.write('a\n');
    destination.flushSync();
    expect(readFileSync(file, 'utf8')).toBe('a\n');
    destination.write('b\n');
    await new Promise<void>((resolve, reject) => destination.flush((err) => (err ? reject(err) : resolve())));
    expect(readFileSync(file, 'utf8')).toBe('a\nb\n');
  });

  it('keeps multi-byte characters whole', async () => {
    const { target, file } = recordingTarget();
    const destination = new TurnBatchedDestination(target);
    destination.write('é\n');
    destination.write('日本\n');
    await nextTurn();
    expect(readFileSync(file, 'utf8')).toBe('é\n日本\n');
  });

  it('a service logger loses no line when the process exits in the turn that logged it', () => {
    // process.exit() in the same turn: the lines are still held by the destination then.
    const script = `
      import { createLogger } from ${JSON.stringify(new URL('../services/shared/logger.ts', import.meta.url).href)};
      const logger = createLogger({ name: 'exit-test', level: 'info' });
      for (let i = 0; i < 1000; i++) logger.info({ i }, 'line');
      process.exit(3);
    `;
    let out = '';
    try {
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    } catch (err) {
      const e = err as { status: number; stdout: string };
      expect(e.status).toBe(3);
      out = e.stdout;
    }
    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as { i: number; service: string });
    expect(lines.map((l) => l.i)).toEqual([...Array(1000).keys()]);
    expect(lines[0]!.service).toBe('exit-test');
  });

  it('createLogger writes through it by default', () => {
    const logger = createLogger({ name: 'default-destination', level: 'info' });
    expect((logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym]).toBeInstanceOf(TurnBatchedDestination);
  });
});

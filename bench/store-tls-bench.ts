// The store with TLS against without, and against Redis with TLS on the same certificate,
// at pipeline depths 1 and 16 (docs/benchmarks.md#tls).
//
// The load generator (kvload, an external C instrument: --kvload) speaks no TLS, and a
// JavaScript client would be the bottleneck on a small machine, so the TLS variants go
// through one client-side TLS terminator, stunnel (Debian's stunnel4), the same process
// and settings for both servers: kvload -> plaintext -> stunnel -> TLS -> server. The
// plaintext variants connect kvload straight to the server. Runs alternate (the order of
// the four variants rotates each round) and the report gives medians with their range.
// Besides throughput and latency it reports each server's CPU per command (from /proc):
// the terminator's own work, which shares the machine's cores, is not in it.
//
//   node bench/store-tls-bench.ts --kvload /path/to/kvload [--rounds 5] [--duration 5] [--connections 50] [--depths 1,16]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, loadavg, cpus } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../services/shared/free-port.ts';
import { median } from './harness/median.ts';
import { numberOption, parseOptions } from './harness/options.ts';
import { processCpuSeconds } from './harness/process-cpu.ts';
import { children, killAll, killChildrenOnExit, log } from './harness/processes.ts';
import { kvloadFill, kvloadRun, type LoadFigures } from './harness/processes.ts';
import { startRedis, startStore, type Service } from './harness/services.ts';

const USAGE = `usage: node bench/store-tls-bench.ts --kvload <path> [--rounds n] [--duration s] [--connections n] [--depths 1,16]`;
const values = parseOptions(USAGE, {
  kvload: { type: 'string' },
  rounds: { type: 'string' },
  duration: { type: 'string' },
  connections: { type: 'string' },
  depths: { type: 'string' },
});
if (values.kvload === undefined) throw new Error(`--kvload is required\n${USAGE}`);
const kvload = values.kvload;
const rounds = numberOption('--rounds', values.rounds, 5, { min: 1, integer: true });
const duration = numberOption('--duration', values.duration, 5, { min: 1 });
const connections = numberOption('--connections', values.connections, 50, { min: 1, integer: true });
const depths = (values.depths ?? '1,16').split(',').map((d) => numberOption('--depths', d, 1, { min: 1, integer: true }));
const WARMUP_S = 1;
const KEYSPACE = 100_000;

for (const tool of ['openssl', 'stunnel4', 'redis-server']) {
  if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) throw new Error(`${tool} is needed (Debian: apt-get install ${tool === 'stunnel4' ? 'stunnel4' : tool === 'redis-server' ? 'redis-server' : 'openssl'})`);
}
killChildrenOnExit();

/** One self-signed certificate for 127.0.0.1: both servers present it, stunnel checks it. */
function makeCertificate(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'server.crt');
  const key = join(dir, 'server.key');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=bench', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
  return { cert, key };
}

/** Resolves once something accepts on the port. */
async function accepting(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ port, host: '127.0.0.1' }, () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing accepts on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** stunnel as a client: each local plaintext port forwards over TLS to its server, checking the certificate. */
async function startStunnel(dir: string, caFile: string, routes: Record<string, number>): Promise<{ child: ChildProcess; ports: Record<string, number> }> {
  const ports: Record<string, number> = {};
  let conf = `foreground = yes\npid =\nclient = yes\nsocket = l:TCP_NODELAY=1\nsocket = r:TCP_NODELAY=1\ndebug = 3\n`;
  for (const [name, target] of Object.entries(routes)) {
    ports[name] = await freePort();
    conf += `[${name}]\naccept = 127.0.0.1:${ports[name]}\nconnect = 127.0.0.1:${target}\nverifyChain = yes\nCAfile = ${caFile}\ncheckIP = 127.0.0.1\n`;
  }
  const file = join(dir, 'stunnel.conf');
  writeFileSync(file, conf);
  const child = spawn('stunnel4', [file], { stdio: ['ignore', 'ignore', 'inherit'] });
  children.add(child);
  for (const port of Object.values(ports)) await accepting(port);
  return { child, ports };
}

interface Variant {
  readonly name: string;
  readonly mode: 'line' | 'resp';
  readonly port: number;
  readonly server: Service;
  readonly viaTerminator: boolean;
}

interface Run {
  readonly variant: string;
  readonly depth: number;
  readonly figures: LoadFigures;
  /** The server's CPU per command over the run (warm-up included), µs. */
  readonly serverUsPerOp: number | undefined;
  /** stunnel's CPU over the run, in cores. */
  readonly terminatorCores: number | undefined;
}

const dir = mkdtempSync(join(tmpdir(), 'kvstack-tls-bench-'));
try {
  const { cert, key } = makeCertificate(dir);
  const storePlain = await startStore({ env: { STORE_HOST: '127.0.0.1' } });
  const storeTls = await startStore({ env: { STORE_HOST: '127.0.0.1', STORE_TLS_CERT_FILE: cert, STORE_TLS_KEY_FILE: key } });
  const redisPlain = await startRedis();
  const redisTlsPort = await freePort();
  // The same certificate; no client certificates asked (as the store here).
  const redisTls = await startRedis({ args: ['--port', '0', '--tls-port', String(redisTlsPort), '--tls-cert-file', cert, '--tls-key-file', key, '--tls-auth-clients', 'no', '--save', '', '--appendonly', 'no'] });
  const stunnel = await startStunnel(dir, cert, { kvstore: storeTls.port, redis: redisTlsPort });
  const variants: Variant[] = [
    { name: 'kvstack', mode: 'line', port: storePlain.port, server: storePlain, viaTerminator: false },
    { name: 'kvstack TLS', mode: 'line', port: stunnel.ports.kvstore!, server: storeTls, viaTerminator: true },
    { name: 'Redis', mode: 'resp', port: redisPlain.port, server: redisPlain, viaTerminator: false },
    { name: 'Redis TLS', mode: 'resp', port: stunnel.ports.redis!, server: redisTls, viaTerminator: true },
  ];
  const common = (v: Variant, depth: number) => ['-h', '127.0.0.1', '-p', String(v.port), '-m', v.mode, '-c', String(connections), '-P', String(depth), '-k', String(KEYSPACE)];
  for (const v of variants) {
    const fill = await kvloadFill(kvload, common(v, 16));
    if (fill.errors > 0) throw new Error(`prefill of ${v.name} had ${fill.errors} errors`);
    log(`${v.name}: ${KEYSPACE} keys written in ${fill.seconds.toFixed(2)} s`);
  }

  const runs: Run[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const depth of depths) {
      for (let i = 0; i < variants.length; i++) {
        const v = variants[(i + round) % variants.length]!;
        const serverBefore = processCpuSeconds(v.server.pid);
        const tunnelBefore = processCpuSeconds(stunnel.child.pid!);
        const started = performance.now();
        const { command, result } = await kvloadRun(kvload, [...common(v, depth), '-N', '-d', String(duration), '-w', String(WARMUP_S)]);
        const seconds = (performance.now() - started) / 1000;
        const serverAfter = processCpuSeconds(v.server.pid);
        const tunnelAfter = processCpuSeconds(stunnel.child.pid!);
        const ops = result.opsPerSec * (duration + WARMUP_S);
        const serverUsPerOp = serverBefore === undefined || serverAfter === undefined ? undefined : ((serverAfter - serverBefore) / ops) * 1e6;
        const terminatorCores = !v.viaTerminator || tunnelBefore === undefined || tunnelAfter === undefined ? undefined : (tunnelAfter - tunnelBefore) / seconds;
        if (result.errors > 0) log(`WARNING: ${result.errors} errors in ${command}`);
        log(`round ${round + 1} depth ${depth} ${v.name}: ${Math.round(result.opsPerSec)} ops/s, p99 ${result.latencyMs.p99.toFixed(2)} ms`);
        runs.push({ variant: v.name, depth, figures: result, serverUsPerOp, terminatorCores });
      }
    }
  }

  const fmt = (n: number | undefined, digits = 0) => (n === undefined ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
  const lines = [
    `${rounds} rounds, ${duration} s each after ${WARMUP_S} s of warm-up, ${connections} connections, 90% GET / 10% SET, 16-byte keys, 100-byte values, ${KEYSPACE} keys; ${cpus().length} CPUs, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} at the end`,
    '',
    '| depth | server | ops/s, median (range) | p50 ms | p99 ms | server CPU µs/op | stunnel, cores |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const depth of depths) {
    for (const v of variants) {
      const rs = runs.filter((r) => r.depth === depth && r.variant === v.name);
      const ops = rs.map((r) => r.figures.opsPerSec);
      lines.push(
        `| ${depth} | ${v.name} | ${fmt(median(ops))} (${fmt(Math.min(...ops))}–${fmt(Math.max(...ops))}) | ${fmt(median(rs.map((r) => r.figures.latencyMs.p50)), 2)} | ${fmt(median(rs.map((r) => r.figures.latencyMs.p99)), 2)} | ${fmt(median(rs.map((r) => r.serverUsPerOp)), 1)} | ${v.viaTerminator ? fmt(median(rs.map((r) => r.terminatorCores)), 2) : '–'} |`,
      );
    }
  }
  process.stdout.write(lines.join('\n') + '\n');
} finally {
  killAll();
  rmSync(dir, { recursive: true, force: true });
}

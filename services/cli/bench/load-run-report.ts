import type { BenchResult } from './bench-runner.ts';

const n = (x: number) => x.toLocaleString('en-US');
const ms = (x: number) => x.toFixed(3);

/** The human-readable result of `kv bench`. */
export function formatBenchReport(r: BenchResult): string {
  const lines = [
    `${r.protocol === 'line' ? 'kvstack' : r.protocol.toUpperCase()} ${r.target}  ${r.connections} connections  pipeline ${r.pipeline}${r.threads > 1 ? `  ${r.threads} threads` : ''}  ` +
      `${n(r.keyspace)} keys  ${r.valueSize}-byte values  GET:SET ${r.ratio}`,
  ];
  if (r.prefill) lines.push(`prefill   ${n(r.prefill.requests)} SETs in ${r.prefill.seconds.toFixed(2)} s (${n(r.prefill.opsPerSec)} ops/s)`);
  if (r.warmup) lines.push(`warm-up   ${n(r.warmup.requests)} requests in ${r.warmup.seconds.toFixed(2)} s (not measured)`);
  if (r.requests > 0) {
    lines.push(
      `requests  ${n(r.requests)} (${n(r.gets)} GET, ${n(r.sets)} SET) in ${r.seconds.toFixed(2)} s`,
      `rate      ${n(r.opsPerSec)} ops/s`,
      `latency   p50 ${ms(r.latencyMs.p50)}  p90 ${ms(r.latencyMs.p90)}  p99 ${ms(r.latencyMs.p99)}  p99.9 ${ms(r.latencyMs.p999)}  max ${ms(r.latencyMs.max)} ms`,
    );
  }
  if (r.shards) {
    lines.push(`shards    ${r.shards.length}, driven at once; each with its keys (as the ring routes them) and its share of the connections:`);
    for (const s of r.shards) {
      lines.push(
        `  ${s.shard}  ${s.connections} connections  ${n(s.keyspace)} keys  ${n(s.requests)} requests  ${n(s.opsPerSec)} ops/s  ` +
          `p50 ${ms(s.latencyMs.p50)}  p99 ${ms(s.latencyMs.p99)} ms  ${n(s.errors)} errors  ${n(s.wrongReplies)} wrong`,
      );
    }
    lines.push(`total     ${n(r.opsPerSec)} ops/s over the shards (latency above: the shard with the highest p99)`);
  }
  const problems = r.errors + r.wrongReplies;
  lines.push(
    problems === 0
      ? `replies   all correct${r.misses && r.prefill === null ? ` (${n(r.misses)} GET misses: the keyspace was not prefilled)` : ''}`
      : `replies   WARNING: ${n(r.errors)} error replies, ${n(r.wrongReplies)} wrong replies (wrong shape or size${r.prefill ? ', or a prefilled key not found' : ''})`,
  );
  return lines.join('\n') + '\n';
}

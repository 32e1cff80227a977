import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { isIPv4, isIPv6 } from 'node:net';

// A small authoritative DNS server on loopback UDP for the discovery suites: it answers
// SRV, A and AAAA questions from a table the test changes while it runs, can stay
// silent (a server that times out) or answer SERVFAIL, and counts the questions.

export interface SrvTarget {
  readonly target: string;
  readonly port: number;
  readonly priority?: number;
  readonly weight?: number;
}

/** The records of one name; a name in the table with no records answers NOERROR with none (an empty answer). */
export interface DnsRecords {
  srv?: SrvTarget[];
  a?: string[];
  aaaa?: string[];
}

export type DnsMode = 'answer' | 'silent' | 'servfail';

const TYPE = { A: 1, AAAA: 28, SRV: 33 } as const;

export interface TestDnsServer {
  readonly port: number;
  /** `127.0.0.1:<port>`: the KV_STORE_DNS_SERVER that reaches it. */
  readonly address: string;
  /** Names (lower case, no final dot) to records; changed by the test at any time. */
  readonly records: Map<string, DnsRecords>;
  mode: DnsMode;
  /** Questions received, as `TYPE name`. */
  readonly questions: string[];
  close(): Promise<void>;
}

function encodeName(name: string): Buffer {
  const parts = name.replace(/\.$/, '').split('.').filter((p) => p !== '');
  return Buffer.concat([...parts.map((p) => Buffer.concat([Buffer.from([p.length]), Buffer.from(p, 'ascii')])), Buffer.from([0])]);
}

/** The question's name, type and the offset just past it. */
function readQuestion(msg: Buffer): { name: string; type: number; end: number } {
  let at = 12;
  const labels: string[] = [];
  while (msg[at]! !== 0) {
    const len = msg[at]!;
    labels.push(msg.toString('ascii', at + 1, at + 1 + len));
    at += 1 + len;
  }
  at += 1;
  return { name: labels.join('.').toLowerCase(), type: msg.readUInt16BE(at), end: at + 4 };
}

function record(type: number, rdata: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(0xc00c, 0); // the question's name
  head.writeUInt16BE(type, 2);
  head.writeUInt16BE(1, 4); // IN
  head.writeUInt32BE(5, 6); // TTL: Node's SRV answers do not show it; discovery polls
  head.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([head, rdata]);
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

function answers(records: DnsRecords, type: number): Buffer[] {
  if (type === TYPE.A) return (records.a ?? []).filter((a) => isIPv4(a)).map((a) => record(type, Buffer.from(a.split('.').map(Number))));
  if (type === TYPE.AAAA) return (records.aaaa ?? []).filter((a) => isIPv6(a)).map((a) => record(type, ipv6Bytes(a)));
  if (type === TYPE.SRV) {
    return (records.srv ?? []).map((s) => {
      const fixed = Buffer.alloc(6);
      fixed.writeUInt16BE(s.priority ?? 0, 0);
      fixed.writeUInt16BE(s.weight ?? 0, 2);
      fixed.writeUInt16BE(s.port, 4);
      return record(type, Buffer.concat([fixed, encodeName(s.target)]));
    });
  }
  return [];
}

function reply(query: Buffer, end: number, rcode: number, body: Buffer[]): Buffer {
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // the id
  const rd = query[2]! & 0x01;
  header[2] = 0x80 | 0x04 | rd; // a response, authoritative, recursion desired as asked
  header[3] = 0x80 | rcode; // recursion available
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(body.length, 6);
  return Buffer.concat([header, query.subarray(12, end), ...body]);
}

export async function startTestDnsServer(initial: Record<string, DnsRecords> = {}): Promise<TestDnsServer> {
  const socket: Socket = createSocket('udp4');
  const records = new Map(Object.entries(initial).map(([k, v]) => [k.toLowerCase().replace(/\.$/, ''), v]));
  const server: TestDnsServer = {
    port: 0,
    address: '',
    records,
    mode: 'answer',
    questions: [],
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
  socket.on('message', (msg: Buffer, from: RemoteInfo) => {
    if (msg.length < 12) return;
    let question;
    try {
      question = readQuestion(msg);
    } catch {
      return;
    }
    const typeName = Object.entries(TYPE).find(([, v]) => v === question.type)?.[0] ?? String(question.type);
    server.questions.push(`${typeName} ${question.name}`);
    if (server.mode === 'silent') return;
    const found = records.get(question.name);
    const out =
      server.mode === 'servfail'
        ? reply(msg, question.end, 2, [])
        : found === undefined
          ? reply(msg, question.end, 3, []) // NXDOMAIN
          : reply(msg, question.end, 0, answers(found, question.type));
    socket.send(out, from.port, from.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  const port = socket.address().port;
  return Object.assign(server, { port, address: `127.0.0.1:${port}` });
}

// Certificates the TLS suites make themselves with openssl (Debian's, installed by CI's
// apt list): a CA, a second unrelated CA, server and client certificates signed by each,
// and an expired one. EC P-256 keys: quick to make. Never committed: made in a temp
// directory per process and removed at its exit.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface IssuedCert {
  readonly cert: string;
  readonly key: string;
}

export interface TlsFixture {
  readonly dir: string;
  /** The CA every good certificate is signed by. */
  readonly ca: string;
  /** Another CA: what it signed the store does not trust, and a client trusting only it refuses the store. */
  readonly otherCa: string;
  /** For 127.0.0.1 and localhost, serverAuth and clientAuth (the store's probe presents it). */
  readonly server: IssuedCert;
  /** The same names, another key: what a rotation puts in place. */
  readonly rotated: IssuedCert;
  readonly client: IssuedCert;
  /** Signed by otherCa. */
  readonly strangerClient: IssuedCert;
  /** For 127.0.0.1, valid 2020-01-01 to 2020-01-02. */
  readonly expired: IssuedCert;
  /** Issues another certificate signed by the CA (written under dir as name.crt and name.key). */
  issue(name: string, options?: IssueOptions): IssuedCert;
}

export interface IssueOptions {
  readonly cn?: string;
  readonly san?: string;
  readonly eku?: string;
  /** openssl ca's -startdate / -enddate, YYYYMMDDHHMMSSZ. */
  readonly start?: string;
  readonly end?: string;
  readonly by?: 'ca' | 'other';
}

const openssl = (cwd: string, args: string[]): void => void execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });

function makeCa(dir: string, name: string): void {
  openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '3650', '-subj', `/CN=${name}`]);
  mkdirSync(join(dir, `${name}-db`));
  writeFileSync(join(dir, `${name}-db`, 'index'), '');
  writeFileSync(join(dir, `${name}-db`, 'serial'), '1000\n');
  writeFileSync(
    join(dir, `${name}.cnf`),
    `[ca]\ndefault_ca = c\n[c]\ndatabase = ${name}-db/index\nnew_certs_dir = ${name}-db\nserial = ${name}-db/serial\ndefault_md = sha256\npolicy = p\nunique_subject = no\n[p]\ncommonName = supplied\n`,
  );
}

let made: TlsFixture | undefined;

/** The process's fixture, made at the first call (about a second of openssl). */
export function tlsFixture(): TlsFixture {
  if (made) return made;
  const dir = mkdtempSync(join(tmpdir(), 'kvstack-tls-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  makeCa(dir, 'ca');
  makeCa(dir, 'other');
  const issue = (name: string, o: IssueOptions = {}): IssuedCert => {
    const by = o.by ?? 'ca';
    openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${o.cn ?? name}`]);
    writeFileSync(join(dir, `${name}.ext`), `[x]\nsubjectAltName = ${o.san ?? 'IP:127.0.0.1,DNS:localhost'}\nextendedKeyUsage = ${o.eku ?? 'serverAuth,clientAuth'}\n`);
    const dates = o.start !== undefined && o.end !== undefined ? ['-startdate', o.start, '-enddate', o.end] : ['-days', '30'];
    openssl(dir, ['ca', '-batch', '-notext', '-config', `${by}.cnf`, '-cert', `${by}.crt`, '-keyfile', `${by}.key`, '-in', `${name}.csr`, '-out', `${name}.crt`, '-extfile', `${name}.ext`, '-extensions', 'x', ...dates]);
    return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  };
  made = {
    dir,
    ca: join(dir, 'ca.crt'),
    otherCa: join(dir, 'other.crt'),
    server: issue('server', { cn: 'kvstore' }),
    rotated: issue('rotated', { cn: 'kvstore-rotated' }),
    client: issue('client', { san: 'DNS:kvbackend', eku: 'clientAuth' }),
    strangerClient: issue('stranger', { san: 'DNS:stranger', eku: 'clientAuth', by: 'other' }),
    expired: issue('expired', { start: '20200101000000Z', end: '20200102000000Z' }),
    issue,
  };
  return made;
}

/** A file's contents (PEM). */
export const pem = (path: string): string => readFileSync(path, 'utf8');

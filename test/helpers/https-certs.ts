// Certificates the backend's HTTPS suites make themselves with openssl: a CA, and server
// certificates it signs for 127.0.0.1 and localhost. EC P-256 keys: quick to make. Never
// committed: made in a temp directory per process, removed at its exit.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServerCert {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
  /** The certificate's serial number as openssl prints it (hex), to tell two apart on the wire. */
  readonly serial: string;
}

export interface HttpsFixture {
  readonly dir: string;
  /** The CA's certificate (PEM) every server certificate here is signed by. */
  readonly ca: string;
  /** Issues a server certificate for 127.0.0.1 and localhost, written as name.crt and name.key; `days` may be negative for an expired one. */
  issue(name: string, days?: number): ServerCert;
}

const openssl = (cwd: string, args: string[]): string => execFileSync('openssl', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

let made: HttpsFixture | undefined;

/** The process's fixture, made at the first call. */
export function httpsFixture(): HttpsFixture {
  if (made) return made;
  const dir = mkdtempSync(join(tmpdir(), 'kvstack-https-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  openssl(dir, ['req', '-x509', ...newKey, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '3650', '-subj', '/CN=kvstack test CA']);
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth\n');
  const issue = (name: string, days = 30): ServerCert => {
    openssl(dir, ['req', ...newKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
    // A negative -days gives a notAfter before now: an expired certificate.
    openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', String(days), '-extfile', 'server.ext', '-out', `${name}.crt`]);
    const serial = openssl(dir, ['x509', '-in', `${name}.crt`, '-noout', '-serial']).trim().replace(/^serial=/, '');
    const certFile = join(dir, `${name}.crt`);
    const keyFile = join(dir, `${name}.key`);
    return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), serial };
  };
  made = { dir, ca: readFileSync(join(dir, 'ca.crt'), 'utf8'), issue };
  return made;
}

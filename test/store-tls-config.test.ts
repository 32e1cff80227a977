// SPEC §8: the store's TLS settings are checked at start-up, each error naming the
// variable (and the file's path, never a key's bytes).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadStoreConfig } from '../services/config/config.ts';
import { tempFiles } from './helpers/temp-dirs.ts';
import { pem, tlsFixture } from './helpers/tls-certs.ts';

const f = tlsFixture();
const file = tempFiles('kvstore-tls-config-');
const { dir } = file;
const tls = { STORE_TLS_CERT_FILE: f.server.cert, STORE_TLS_KEY_FILE: f.server.key };

describe('store TLS settings', () => {
  it('off by default; a certificate and its key turn it on, with the certificate\'s expiry read', () => {
    expect(loadStoreConfig({}).tls).toBeUndefined();
    const config = loadStoreConfig({ ...tls, STORE_TLS_CA_FILE: f.ca, STORE_TLS_CLIENT_AUTH: 'require' });
    expect(config.tls).toMatchObject({ clientAuth: 'require' });
    expect(config.tls!.material.certExpiresAt).toBeGreaterThan(Date.now() / 1000);
    expect(JSON.stringify(config.tls)).not.toMatch(/PRIVATE KEY/);
  });

  it.each([
    [{ STORE_TLS_CERT_FILE: f.server.cert }, /STORE_TLS_CERT_FILE is set but STORE_TLS_KEY_FILE is not/],
    [{ STORE_TLS_KEY_FILE: f.server.key }, /STORE_TLS_KEY_FILE is set but STORE_TLS_CERT_FILE is not/],
    [{ ...tls, STORE_TLS_CLIENT_AUTH: 'require' }, /STORE_TLS_CLIENT_AUTH=require is invalid without STORE_TLS_CA_FILE/],
    [{ ...tls, STORE_TLS_CA_FILE: f.ca }, /STORE_TLS_CA_FILE is set but STORE_TLS_CLIENT_AUTH is none/],
    [{ STORE_TLS_CA_FILE: f.ca, STORE_TLS_CLIENT_AUTH: 'optional' }, /STORE_TLS_CA_FILE is set but STORE_TLS_CERT_FILE and STORE_TLS_KEY_FILE are not/],
    [{ ...tls, STORE_NATIVE_IO: 'on' }, /STORE_NATIVE_IO=on is invalid with STORE_TLS_CERT_FILE: TLS connections go through Node's TLS stack/],
    [{ ...tls, STORE_TLS_CLIENT_AUTH: 'sometimes' }, /STORE_TLS_CLIENT_AUTH="sometimes" is invalid: expected one of none, optional, require/],
    [{ ...tls, STORE_TLS_CERT_FILE: join(dir, 'missing.crt') }, /STORE_TLS_CERT_FILE=".*missing\.crt" is invalid: cannot read it \(ENOENT\)/],
    [{ ...tls, STORE_TLS_KEY_FILE: f.rotated.key }, /STORE_TLS_KEY_FILE=".*rotated\.key" is invalid: the key does not match the certificate of STORE_TLS_CERT_FILE/],
    [{ ...tls, STORE_TLS_CERT_FILE: f.server.key }, /STORE_TLS_CERT_FILE=.* is invalid: no PEM certificate in it/],
    [{ ...tls, STORE_TLS_KEY_FILE: f.server.cert }, /STORE_TLS_KEY_FILE=.* is invalid: no PEM private key in it/],
    [{ ...tls, STORE_TLS_CERT_FILE: file('garbled.crt', '-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n') }, /STORE_TLS_CERT_FILE=.* is invalid: its first PEM certificate does not parse/],
  ])('refuses %o', (env, message) => {
    let err: unknown;
    try {
      loadStoreConfig(env);
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain(pem(f.server.key).split('\n')[1]!);
  });
});

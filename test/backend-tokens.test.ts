// SPEC §8 "Backend tokens": BACKEND_TOKENS_FILE, the 401 and 403 answers, the admin port
// left open, rotation by SIGHUP and on disk (the symlink swap Kubernetes does), a reload
// that fails, the start-up errors, and no token in any log line or metric.
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadBackendConfig } from '../services/config/config.ts';
import { ConfigError } from '../services/shared/config-error.ts';
import { tempFiles } from './helpers/temp-dirs.ts';
import { backendHarness, loggerWithSink, metricSum, scrape, send, statusOf } from './helpers/backend-harness.ts';
import { waitUntil } from './helpers/wait-until.ts';

const h = backendHarness();
const writeFile = tempFiles('kv-tokens-');
const { dir } = writeFile;
let files = 0;
const tokensFile = (text: string): string => writeFile(`tokens-${files++}`, text);

const READ = 'read-token-0123456789abcdef';
const WRITE = 'write-token-0123456789abcdef';
const NEXT = 'rotated-write-token-fedcba9876543210';
const ALL = [READ, WRITE, NEXT];
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function backendWithTokens(text = `# tokens\nread ${READ}\n\nwrite ${WRITE}\n`, level: 'silent' | 'trace' = 'silent') {
  const store = await h.store();
  const path = tokensFile(text);
  const { logger, sink } = loggerWithSink(level);
  const backend = await h.backend(store.port, { tokensFile: path }, { logger, filePollMs: 10 });
  return { backend, path, sink };
}

describe('backend tokens: requests', () => {
  it('no token is 401 with a Bearer challenge and a short plain-text body; nothing is written', async () => {
    const { backend } = await backendWithTokens();
    for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH']) {
      const res = await send(backend.port, method, '/k', method === 'PUT' ? 'v' : undefined);
      expect(res.status, method).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="kvbackend"');
    }
    const res = await send(backend.port, 'GET', '/k');
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.text).toBe('authentication required: send Authorization: Bearer <token>\n');
    // Other schemes and an empty Bearer are no token.
    for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer   ', `Token ${WRITE}`, `Bearer${WRITE}`]) {
      expect((await send(backend.port, 'GET', '/k', undefined, { Authorization: header })).status, header).toBe(401);
    }
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_auth_failures_total', 'reason="missing"')).toBe(11);
    expect((await send(backend.port, 'GET', '/k', undefined, bearer(WRITE))).status).toBe(404);
  });

  it('an unknown token is 401 invalid_token; the token is not echoed', async () => {
    const { backend } = await backendWithTokens();
    const guess = `${WRITE}x`;
    const res = await send(backend.port, 'GET', '/k', undefined, bearer(guess));
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="kvbackend", error="invalid_token"');
    expect(JSON.stringify(res.headers) + res.text).not.toContain(guess);
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_auth_failures_total', 'reason="unknown"')).toBe(1);
  });

  it('a read token reads (GET, HEAD) and gets 403 for every other method; the value stays', async () => {
    const { backend } = await backendWithTokens();
    expect((await send(backend.port, 'PUT', '/k', 'kept', bearer(WRITE))).status).toBe(204);
    const get = await send(backend.port, 'GET', '/k', undefined, bearer(READ));
    expect([get.status, get.text]).toEqual([200, 'kept']);
    const head = await send(backend.port, 'HEAD', '/k', undefined, bearer(READ));
    expect([head.status, head.headers['content-length'], head.text]).toEqual([200, '4', '']);
    expect((await send(backend.port, 'GET', '/absent', undefined, bearer(READ))).status).toBe(404);
    for (const method of ['PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS']) {
      const res = await send(backend.port, method, '/k', method === 'PUT' || method === 'POST' ? 'overwritten' : undefined, bearer(READ));
      expect(res.status, method).toBe(403);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="kvbackend", error="insufficient_scope", scope="write"');
    }
    expect((await send(backend.port, 'GET', '/k', undefined, bearer(READ))).text).toBe('kept');
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_auth_failures_total', 'reason="scope"')).toBe(5);
  });

  it('a write token does everything; the scheme is case-insensitive; a refused body closes its connection', async () => {
    const { backend } = await backendWithTokens();
    expect((await send(backend.port, 'PUT', '/k?ttl=60', 'v1', bearer(WRITE))).status).toBe(204);
    expect((await send(backend.port, 'POST', '/k', 'v2', { Authorization: `bearer ${WRITE}` })).status).toBe(204);
    expect((await send(backend.port, 'GET', '/k', undefined, { Authorization: `BEARER ${WRITE}` })).text).toBe('v2');
    expect((await send(backend.port, 'DELETE', '/k', undefined, bearer(WRITE))).status).toBe(204);
    expect((await send(backend.port, 'PATCH', '/k', undefined, bearer(WRITE))).status).toBe(405);
    const refused = await send(backend.port, 'PUT', '/k', 'v3', bearer(READ));
    expect(refused.headers.connection).toBe('close');
    const metrics = await scrape(backend.metricsPort);
    expect(metricSum(metrics, 'kvbackend_auth_failures_total')).toBe(1);
    expect(metricSum(metrics, 'kvbackend_tokens', 'scope="read"')).toBe(1);
    expect(metricSum(metrics, 'kvbackend_tokens', 'scope="write"')).toBe(1);
  });

  it('the admin port needs no token', async () => {
    const { backend } = await backendWithTokens();
    expect(await statusOf(backend.metricsPort, '/livez')).toBe(200);
    expect(await statusOf(backend.metricsPort, '/readyz')).toBe(200);
    expect(await statusOf(backend.metricsPort, '/metrics')).toBe(200);
  });

  it('`Expect: 100-continue` without a token is answered 401 at once, the body never invited', async () => {
    const { backend } = await backendWithTokens();
    const outcome = await new Promise<{ continued: boolean; status: number }>((resolve, reject) => {
      let continued = false;
      const req = request({ host: '127.0.0.1', port: backend.port, method: 'PUT', path: '/k', agent: false, headers: { Expect: '100-continue', 'Content-Length': '5' } });
      req.on('continue', () => {
        continued = true;
        req.end('value');
      });
      req.on('response', (res) => {
        res.resume();
        resolve({ continued, status: res.statusCode! });
        req.destroy();
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    expect(outcome).toEqual({ continued: false, status: 401 });
  });

  it('without BACKEND_TOKENS_FILE nothing is asked (and the failure series still exist, at zero)', async () => {
    const store = await h.store();
    const backend = await h.backend(store.port);
    expect((await send(backend.port, 'PUT', '/k', 'v')).status).toBe(204);
    const metrics = await scrape(backend.metricsPort);
    expect(metrics).toContain('kvbackend_auth_failures_total{reason="missing"} 0');
    expect(metricSum(metrics, 'kvbackend_tokens')).toBe(0);
  });
});

describe('backend tokens: rotation', () => {
  it('SIGHUP (reload) puts the new file in use; old and new both work while both are in it', async () => {
    const { backend, path, sink } = await backendWithTokens(`write ${WRITE}\n`, 'trace');
    // A rotation: the new token added, clients moved over, the old one removed.
    writeFileSync(path, `write ${WRITE}\nwrite ${NEXT}\n`);
    backend.reload();
    expect((await send(backend.port, 'PUT', '/k', 'old', bearer(WRITE))).status).toBe(204);
    expect((await send(backend.port, 'PUT', '/k', 'new', bearer(NEXT))).status).toBe(204);
    writeFileSync(path, `write ${NEXT}\n`);
    backend.reload();
    expect((await send(backend.port, 'GET', '/k', undefined, bearer(WRITE))).status).toBe(401);
    expect((await send(backend.port, 'GET', '/k', undefined, bearer(NEXT))).text).toBe('new');
    const reloaded = sink.lines.filter((l) => l.msg === 'backend tokens reloaded');
    expect(reloaded.length).toBeGreaterThanOrEqual(2);
    expect(reloaded.at(-1)).toMatchObject({ reason: 'SIGHUP', read: 0, write: 1 });
    for (const token of ALL) expect(sink.raw.join('\n')).not.toContain(token);
  });

  it('a change on disk is picked up with no signal, a Kubernetes symlink swap included', async () => {
    // The layout kubelet makes: tokens -> ..data/tokens, ..data -> ..v1/.
    const secret = join(dir, 'secret');
    mkdirSync(join(secret, '..v1'), { recursive: true });
    writeFileSync(join(secret, '..v1', 'tokens'), `write ${WRITE}\n`);
    symlinkSync('..v1', join(secret, '..data'));
    symlinkSync(join('..data', 'tokens'), join(secret, 'tokens'));
    const store = await h.store();
    const backend = await h.backend(store.port, { tokensFile: join(secret, 'tokens') }, { filePollMs: 10 });
    expect((await send(backend.port, 'PUT', '/k', 'v', bearer(WRITE))).status).toBe(204);

    mkdirSync(join(secret, '..v2'));
    writeFileSync(join(secret, '..v2', 'tokens'), `read ${NEXT}\n`);
    symlinkSync('..v2', join(secret, '..data_tmp'));
    renameSync(join(secret, '..data_tmp'), join(secret, '..data'));
    rmSync(join(secret, '..v1'), { recursive: true });
    await waitUntil('the swapped tokens in use', async () => ((await send(backend.port, 'GET', '/k', undefined, bearer(NEXT))).status === 200 ? true : undefined), { everyMs: 10 });
    expect((await send(backend.port, 'GET', '/k', undefined, bearer(WRITE))).status).toBe(401);
    expect((await send(backend.port, 'PUT', '/k', 'v', bearer(NEXT))).status).toBe(403);
  });

  it('a reload that fails keeps the tokens in use, is counted every time and logged once, naming the line and not the token', async () => {
    const { backend, path, sink } = await backendWithTokens(`write ${WRITE}\n`, 'trace');
    writeFileSync(path, `write ${WRITE}\n${NEXT}\n`); // line 2 lacks its scope
    backend.reload();
    backend.reload();
    // Each reload stamps the file it read, so the poll does not try the same version again.
    expect(metricSum(await scrape(backend.metricsPort), 'kvbackend_tokens_reload_failures_total')).toBe(2);
    expect((await send(backend.port, 'PUT', '/k', 'v', bearer(WRITE))).status).toBe(204);
    expect((await send(backend.port, 'GET', '/k', undefined, bearer(NEXT))).status).toBe(401);
    const failed = sink.lines.filter((l) => l.msg === 'backend tokens reload failed: the ones in use stay');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.err).toContain('line 2');
    expect(failed[0]!.err).toContain('BACKEND_TOKENS_FILE');
    for (const token of ALL) expect(sink.raw.join('\n')).not.toContain(token);

    // Fixed: in use at the next reload, and a later failure is logged again.
    writeFileSync(path, `write ${NEXT}\n`);
    backend.reload();
    expect((await send(backend.port, 'GET', '/k', undefined, bearer(NEXT))).status).toBe(200);
    writeFileSync(path, 'write short\n');
    backend.reload();
    expect(sink.lines.filter((l) => l.msg === 'backend tokens reload failed: the ones in use stay')).toHaveLength(2);
  });
});

describe('backend tokens: start-up', () => {
  const load = (text: string) => () => loadBackendConfig({ BACKEND_TOKENS_FILE: tokensFile(text) });
  const refused = (text: string): string => {
    try {
      load(text)();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('the file was accepted');
  };

  it('a malformed line stops the start, naming the variable and the line, never the token', () => {
    const cases: [string, string][] = [
      [`read ${READ}\n${WRITE}\n`, 'line 2 is not "<scope> <token>" (1 fields)'],
      [`# c\n\nadmin ${WRITE}\n`, 'line 3 has no scope: the first field must be read or write'],
      [`write ${WRITE} extra\n`, 'line 1 is not "<scope> <token>" (3 fields)'],
      [`write ${WRITE}"\n`, 'line 1 has a token with characters a Bearer header cannot carry'],
      ['write short\n', 'line 1 has a token shorter than 16 characters'],
      [`read ${WRITE}\nwrite ${WRITE}\n`, 'line 2 repeats the token of line 1'],
      ['# nothing but comments\n\n', 'it holds no token'],
    ];
    for (const [text, why] of cases) {
      const message = refused(text);
      expect(message).toContain('BACKEND_TOKENS_FILE=');
      expect(message).toContain(why);
      for (const token of ALL) expect(message).not.toContain(token);
    }
  });

  it('an unreadable file stops the start', () => {
    expect(() => loadBackendConfig({ BACKEND_TOKENS_FILE: join(dir, 'absent') })).toThrow(/BACKEND_TOKENS_FILE=".*absent" is invalid: cannot read it \(ENOENT\)/);
  });

  it('CRLF line ends, tabs and indentation are accepted', () => {
    expect(load(`\tread\t${READ}\r\n  write ${WRITE}  \r\n`)().tokensFile).toContain('tokens-');
  });
});

// The services take node:fs, node:http, node:https and node:tls from
// services/shared/builtins.ts, never as ES-module imports: the first two's facades load
// undici, http2, TLS, zlib and readline with them, the last two load at their first use
// there (see builtins.ts). node:crypto, node:zlib, node:fs/promises and node:worker_threads
// likewise in everything but the backend (which loads them with Express) and the CLI: the
// store uses them only with a password, TLS, a snapshot or no add-on. Type-only imports are
// erased and cost nothing.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cryptoModule, fs, fsPromises, http, httpsModule, tlsModule, workerThreadsModule, zlibModule } from '../services/shared/builtins.ts';
import { serviceSources } from './helpers/service-sources.ts';

/** An import of a value (not `import type`) from one of those modules, or a dynamic import() of one. */
const VALUE_IMPORT = /^\s*import\s+(?!type\b)[^;]*?from\s+'node:(fs|http|https|tls)'|import\(\s*'node:(fs|http|https|tls)'\s*\)/m;
/** The same for the modules only the store's optional parts use. */
const STORE_VALUE_IMPORT = /^\s*import\s+(?!type\b)[^;]*?from\s+'node:(crypto|zlib|fs\/promises|worker_threads)'|import\(\s*'node:(crypto|zlib|fs\/promises|worker_threads)'\s*\)/m;

describe("the services' built-in modules", () => {
  it('are the CommonJS objects, with their functions', () => {
    expect(typeof fs.readFileSync).toBe('function');
    expect(typeof http.createServer).toBe('function');
    expect(typeof httpsModule().createServer).toBe('function');
    expect(typeof tlsModule().connect).toBe('function');
    expect(typeof cryptoModule().createHash).toBe('function');
    expect(typeof zlibModule().crc32).toBe('function');
    expect(typeof fsPromises().open).toBe('function');
    expect(typeof workerThreadsModule().Worker).toBe('function');
  });

  it('are never imported as ES modules in services/', () => {
    const sources = serviceSources();
    expect(sources.length).toBeGreaterThan(100);
    // build-native.ts is a build script, not a service, and the image's native stage copies its folder alone.
    const exempt = new Set([join('shared', 'builtins.ts'), join('store', 'network', 'native', 'build-native.ts')]);
    const offenders = sources.filter((s) => !exempt.has(s.file) && VALUE_IMPORT.test(s.text)).map((s) => s.file);
    expect(offenders).toEqual([]);
  });

  it("the store's optional ones are never imported as ES modules outside the backend and the CLI", () => {
    const sources = serviceSources().filter((s) => !/^(backend|cli)[\\/]/.test(s.file));
    expect(sources.length).toBeGreaterThan(100);
    const offenders = sources.filter((s) => s.file !== join('shared', 'builtins.ts') && STORE_VALUE_IMPORT.test(s.text)).map((s) => s.file);
    expect(offenders).toEqual([]);
  });

  it('the scan catches such an import and lets a type-only one pass', () => {
    expect(VALUE_IMPORT.test("import { readFileSync } from 'node:fs';")).toBe(true);
    expect(VALUE_IMPORT.test("import { createServer as c, type Server } from 'node:http';")).toBe(true);
    expect(VALUE_IMPORT.test("const m = await import('node:https');")).toBe(true);
    expect(VALUE_IMPORT.test("import type { Server } from 'node:http';")).toBe(false);
    expect(VALUE_IMPORT.test("import { rm } from 'node:fs/promises';")).toBe(false);
    expect(VALUE_IMPORT.test("import { connect as c } from 'node:tls';")).toBe(true);
    expect(STORE_VALUE_IMPORT.test("import { rm } from 'node:fs/promises';")).toBe(true);
    expect(STORE_VALUE_IMPORT.test("import { randomInt } from 'node:crypto';")).toBe(true);
    expect(STORE_VALUE_IMPORT.test("import type { X509Certificate } from 'node:crypto';")).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { formatStoreUrl, parseStoreUrl } from '../services/client/store-url.ts';

describe('store connection URLs (kvstack://[:password@]host[:port])', () => {
  it('reads host, port and a percent-encoded password; port 8765 when absent; IPv6 in brackets', () => {
    expect(parseStoreUrl('kvstack://cache.internal')).toEqual({ host: 'cache.internal', port: 8765 });
    expect(parseStoreUrl('kvstack://[::1]:9000/')).toEqual({ host: '::1', port: 9000 });
    const withPassword = parseStoreUrl('kvstack://:p%40ss%20word@10.0.0.1:8765');
    expect(withPassword).toMatchObject({ host: '10.0.0.1', port: 8765 });
    expect(withPassword.password?.reveal()).toBe('p@ss word');
    // The password never prints.
    expect(JSON.stringify(withPassword)).not.toContain('p@ss');
  });

  it('writes what it reads', () => {
    for (const options of [
      { host: '127.0.0.1', port: 1234 },
      { host: '::1', port: 8765, password: 'a b@c:d/e%' },
    ]) {
      const back = parseStoreUrl(formatStoreUrl(options));
      expect({ host: back.host, port: back.port, password: back.password?.reveal() }).toEqual({ password: undefined, ...options });
    }
  });

  it('refuses what it cannot use, never repeating the URL (it may hold a password)', () => {
    for (const [url, reason] of [
      ['redis://:secret-1@h:1', /scheme must be kvstack:\/\//],
      ['kvstack://user:secret-1@h:1', /no user names/],
      ['kvstack://:secret-1@h:1/0', /nothing may follow/],
      ['kvstack://:secret-1@h:1?tls=1', /nothing may follow/],
      ['kvstack://:secret-1@h:0', /port 0/],
      ['kvstack://:secret-1@h:70000', /expected kvstack:/],
      ['kvstack://:secret-1%zz@h:1', /percent-encoding/],
      ['secret-1', /expected kvstack:/],
    ] as const) {
      expect(() => parseStoreUrl(url), url).toThrow(reason);
      try {
        parseStoreUrl(url);
      } catch (err) {
        expect((err as Error).message).not.toContain('secret-1');
      }
    }
  });
});

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Whatever a newcomer runs first on an older Node says in one line that kvstack needs
// Node 24, before anything loads a .ts file. The older Node is faked: a preloaded script
// makes this Node report itself as 20.19.0 (test/fixtures/fake-node-20.cjs).

const root = fileURLToPath(new URL('..', import.meta.url));
const fake = fileURLToPath(new URL('./fixtures/fake-node-20.cjs', import.meta.url));
const CHECK = 'node bin/require-node-24.js';
const LINE = /^kvstack needs Node\.js 24 or newer, and this is Node\.js v20\.19\.0: install Node 24 LTS \(https:\/\/nodejs\.org\/, or `nvm install 24`\) and run this again\.$/;

function run(command: string, args: string[], fakeOld: boolean) {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: fakeOld ? `--require ${JSON.stringify(fake)}` : '' };
  const r = spawnSync(command, args, { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The one line an older Node gets: alone on stderr, no stack trace, no TypeScript loader error. */
function expectTheLine(r: { status: number | null; stdout: string; stderr: string }): void {
  expect(r.status).not.toBe(0);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('npm '));
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(LINE);
  expect(r.stderr + r.stdout).not.toMatch(/ERR_UNKNOWN_FILE_EXTENSION|    at /);
}

describe('an older Node', () => {
  it('kv (npx kv, a global install) says it in one line and exits 1', () => {
    const r = run(process.execPath, ['bin/kv.js', 'get', 'greeting'], true);
    expectTheLine(r);
    expect(r.status).toBe(1);
  });

  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> };
  // npm ci runs preinstall before the install script (the add-on's .ts build); npm start,
  // start:store, start:backend and npm test run their pre-script before the script itself.
  for (const hook of ['preinstall', 'prestart', 'prestart:store', 'prestart:backend', 'pretest']) {
    it(`npm's ${hook} hook runs the check, and says it in one line`, () => {
      expect(pkg.scripts[hook]).toBe(CHECK);
      expectTheLine(run('npm', ['run', '--silent', hook], true));
    });
  }

  it('npm start itself stops at the check, before the services load', () => {
    const r = run('npm', ['start', '--silent'], true);
    expectTheLine(r);
    expect(r.stdout).not.toMatch(/kvstore ready|kvbackend ready/);
  });

  it('the image build runs the check before npm ci, and the build context lets it in', () => {
    const dockerfile = readFileSync(new URL('../deploy/Dockerfile', import.meta.url), 'utf8');
    const build = dockerfile.slice(dockerfile.indexOf(' AS build'));
    const runs = [...build.matchAll(/^RUN (.*)$/gm)].map((m) => m[1]);
    expect(runs[0]).toBe(CHECK);
    expect(build.indexOf(`RUN ${CHECK}`)).toBeLessThan(build.indexOf('RUN npm ci'));
    expect(readFileSync(new URL('../.dockerignore', import.meta.url), 'utf8').split('\n')).toContain('!bin/require-node-24.js');
    expectTheLine(run(process.execPath, ['bin/require-node-24.js'], true));
  });
});

describe('Node 24', () => {
  it('passes the check silently', () => {
    const r = run(process.execPath, ['bin/require-node-24.js'], false);
    expect(r.status).toBe(0);
    expect(r.stdout + r.stderr).toBe('');
  });

  it('kv runs past it', () => {
    const r = run(process.execPath, ['bin/kv.js', '--help'], false);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^kv /);
  });
});

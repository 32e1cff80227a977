import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { STORE_NODE_FLAGS } from './store/runtime/launch-flags.ts';
import { imageTunablesFor } from './store/runtime/malloc-tuning.ts';

// `npm start`: the store and the backend as two child processes sharing this terminal.
// Their JSON logs go straight to stdout. Ctrl-C (SIGINT) or SIGTERM is passed on once
// to each, and this process exits when both have exited. If one dies on its own, the
// other is stopped too: half a stack is worse than none.

// Run as .ts from a clone, as .js from dist/: start the siblings of the same kind.
const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
// The store as its image runs it: its malloc settings (one arena for every thread, V8's
// too) can only come from its environment.
const entries = {
  store: { args: [...STORE_NODE_FLAGS, fileURLToPath(new URL(`./store/main${ext}`, import.meta.url))], env: { ...process.env, ...imageTunablesFor(process.env) } },
  backend: { args: [fileURLToPath(new URL(`./backend/main${ext}`, import.meta.url))], env: process.env },
};

const children = new Map<string, ChildProcess>();
let stopping = false;
let failed = false;

function stopAll(signal: NodeJS.Signals): void {
  for (const child of children.values()) if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}

for (const [name, { args, env }] of Object.entries(entries)) {
  // Own process group: a Ctrl-C in the terminal reaches only this process, which then
  // signals each child exactly once (a second signal would make them stop abruptly).
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'], detached: true, env });
  children.set(name, child);
  child.on('error', (err) => {
    process.stderr.write(`start-local: cannot start the ${name}: ${err.message}\n`);
    failed = true;
    children.delete(name);
    stopAll('SIGTERM');
  });
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (code !== 0) {
      failed = true;
      process.stderr.write(`start-local: the ${name} exited with ${signal ?? `code ${code}`}\n`);
    }
    if (!stopping) {
      // Unexpected exit: stop the other one as well.
      stopping = true;
      failed = true;
      stopAll('SIGTERM');
    }
    if (children.size === 0) process.exit(failed ? 1 : 0);
  });
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) {
      stopAll(signal); // a second Ctrl-C: the children stop at once
      return;
    }
    stopping = true;
    stopAll(signal);
  });
}

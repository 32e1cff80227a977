import type { ServiceProcess } from './service-process.ts';

/**
 * For afterEach: kills every service process a test left running and waits for each to
 * exit, so no process outlives its test. A paused one (SIGSTOP) is resumed first: a
 * stopped process would keep its exit pending.
 */
export async function killLeftovers(children: Iterable<ServiceProcess>): Promise<void> {
  for (const child of children) {
    if (child.child.exitCode === null && child.child.signalCode === null) {
      child.child.kill('SIGCONT');
      child.child.kill('SIGKILL');
    }
    await child.exited;
  }
}

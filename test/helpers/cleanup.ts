// Everything a test opens is tracked here and destroyed in afterEach, so a failing
// assertion never leaks a server or socket into the next test.

interface Destroyable {
  destroy(): void;
}

const open = new Set<Destroyable>();

export function track<T extends Destroyable>(resource: T): T {
  open.add(resource);
  return resource;
}

/** For afterEach: destroys every tracked resource (idempotent destroys make this safe). */
export function destroyAll(): void {
  for (const r of open) r.destroy();
  open.clear();
}

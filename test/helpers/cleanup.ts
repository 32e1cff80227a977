// What a test registers with track() is destroyed in afterEach by the suites that use
// it, so a failing assertion there never leaks a server or socket into the next test.

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

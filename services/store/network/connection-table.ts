/** What the table keeps: its slot in it, -1 when out. */
export interface Slotted {
  tableSlot: number;
}

/**
 * The open connections, in an array each knows its slot in: adding and removing change a
 * slot, never allocate (a Map of them rehashes every few hundred connections under a churn
 * of short ones, ~0.1 KB a connection for the collector).
 */
export class ConnectionTable<T extends Slotted> {
  readonly #items: T[] = [];

  get size(): number {
    return this.#items.length;
  }

  add(item: T): void {
    if (item.tableSlot >= 0) return;
    item.tableSlot = this.#items.length;
    this.#items.push(item);
  }

  /** Whether it was in the table. The last item takes its slot. */
  remove(item: T): boolean {
    const slot = item.tableSlot;
    const items = this.#items;
    if (slot < 0 || items[slot] !== item) return false;
    const last = items.pop()!;
    if (last !== item) {
      items[slot] = last;
      last.tableSlot = slot;
    }
    item.tableSlot = -1;
    return true;
  }

  /** A copy: callers may remove items (close connections) while they go through it. */
  values(): T[] {
    return this.#items.slice();
  }
}

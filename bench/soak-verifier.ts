// The soak's verifier: what every key may hold, from the writes that were acknowledged
// and those whose answer was lost, so each read can be checked.

export interface Mismatch {
  readonly key: string;
  readonly via: string;
  readonly expected: string;
  readonly got: string;
}

/** What a key may hold: the last acknowledged state, plus states of writes whose answer was lost. */
interface KeyState {
  value: Buffer | null;
  possible: (Buffer | null)[];
}

export class Verifier {
  readonly keys = new Map<string, KeyState>();
  readonly mismatches: Mismatch[] = [];

  state(key: string): KeyState {
    let s = this.keys.get(key);
    if (s === undefined) {
      s = { value: null, possible: [] };
      this.keys.set(key, s);
    }
    return s;
  }

  acknowledged(key: string, value: Buffer | null): void {
    const s = this.state(key);
    s.value = value;
    s.possible = [];
  }

  /** A write or delete whose outcome is unknown (error or time-out): it may or may not have happened. */
  uncertain(key: string, value: Buffer | null): void {
    this.state(key).possible.push(value);
  }

  /** Checks a read; returns false (and records the mismatch) when no write can explain it. */
  read(key: string, got: Buffer | null, via: string): boolean {
    const s = this.state(key);
    const candidates = [s.value, ...s.possible];
    const match = candidates.find((c) => (c === null ? got === null : got !== null && c.equals(got)));
    if (match === undefined) {
      this.mismatches.push({ key, via, expected: candidates.map(describe).join(' or '), got: describe(got) });
      return false;
    }
    s.value = match;
    s.possible = [];
    return true;
  }
}

function describe(v: Buffer | null): string {
  if (v === null) return 'absent';
  const head = v.subarray(0, 24).toString('hex');
  return `${v.length} bytes ${head}${v.length > 24 ? '…' : ''}`;
}

/** `count` distinct keys, `${prefix}0` up to `${prefix}${count - 1}`. */
export function numberedKeys(count: number, prefix = 'key-'): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${i}`);
}

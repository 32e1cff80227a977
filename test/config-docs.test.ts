import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { backendSettings, storeSettings, type Setting } from '../services/config/config.ts';

function table(title: string, settings: Record<string, Setting<unknown>>): string {
  const rows = Object.values(settings).map((s) => `| \`${s.env}\` | \`${s.default}\` | ${s.description} |`);
  return [`**${title}**`, '', '| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

describe('docs/configuration.md: the settings tables', () => {
  it('matches the config loader: every variable, default and meaning', () => {
    const page = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');
    const m = /<!-- config-table:start -->\n([\s\S]*?)\n<!-- config-table:end -->/.exec(page);
    expect(m, 'docs/configuration.md has the config-table markers').not.toBeNull();
    const expected = [
      table('Store (`npm run start:store`)', storeSettings),
      table('Backend (`npm run start:backend`)', backendSettings),
    ].join('\n\n');
    expect(m![1]).toBe(expected);
  });

  it('every default in the tables parses with its own validator', () => {
    for (const s of [...Object.values(storeSettings), ...Object.values(backendSettings)] as Setting<unknown>[]) {
      expect(() => s.parse(s.default, s.env)).not.toThrow();
    }
  });
});

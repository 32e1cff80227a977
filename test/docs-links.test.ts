import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

// The front page and the docs pages link to each other by file and heading, and code
// comments point at those headings: a page renamed or a heading reworded must not leave a
// link pointing nowhere.

const root = new URL('..', import.meta.url).pathname;
const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

const withoutCode = (text: string): string => text.replace(/```[\s\S]*?```/g, '');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const m of withoutCode(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = m[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');
    const n = seen.get(slug);
    seen.set(slug, (n ?? -1) + 1);
    anchors.add(n === undefined ? slug : `${slug}-${n + 1}`);
  }
  return anchors;
}

function links(page: string): { target: string; anchor: string | undefined; text: string }[] {
  const text = withoutCode(readFileSync(join(root, page), 'utf8'));
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((url) => !/^[a-z]+:/.test(url))
    .map((url) => {
      const [path, anchor] = url.split('#', 2) as [string, string | undefined];
      return { target: path === '' ? page : normalize(join(dirname(page), path)), anchor, text: url };
    });
}

describe('links between the README and the docs pages', () => {
  it('finds the pages and the GitHub anchors of their headings', () => {
    expect(pages).toContain('docs/architecture.md');
    expect(headingAnchors('# A b\n## What stays the operator\'s job\n### Choosing SHARD_EJECT_AFTER\n## A b\n```\n# not a heading\n```'))
      .toEqual(new Set(['a-b', 'what-stays-the-operators-job', 'choosing-shard_eject_after', 'a-b-1']));
  });

  it.each(pages)('%s: every relative link names a file that exists, and a heading of it', (page) => {
    for (const link of links(page)) {
      expect(existsSync(join(root, link.target)), `${page}: ${link.text}`).toBe(true);
      if (link.anchor !== undefined && link.target.endsWith('.md')) {
        expect(headingAnchors(readFileSync(join(root, link.target), 'utf8')), `${page}: ${link.text}`).toContain(link.anchor);
      }
    }
  });
});

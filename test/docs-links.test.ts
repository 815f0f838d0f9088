import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The docs are the repository's own: README.md is the front door (kept short), every relative link in
 * the Markdown resolves to a file or folder of this repository, and nothing refers to documents
 * outside it or to tracker numbers (a comment or doc says its rule in words).
 */
const ROOT = resolve(import.meta.dirname, '..');
const README_MAX_BYTES = 10 * 1024;

/** Markdown files under a folder, outside node_modules and dot-folders. */
function markdownUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name.startsWith('.')) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownUnder(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

const DOCS = [
  join(ROOT, 'README.md'),
  ...['docs', 'src', 'scripts', 'packages', 'deploy'].flatMap((d) => markdownUnder(join(ROOT, d))),
];

/** The targets of inline Markdown links `[text](target)` and of reference definitions `[x]: target`. */
function linkTargets(markdown: string): string[] {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '');
  const inline = [...withoutCode.matchAll(/\]\(\s*(?:<([^>]*)>|([^)\s]+))(?:\s+"[^"]*")?\s*\)/g)].map((m) => (m[1] ?? m[2])!);
  const defined = [...withoutCode.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!);
  return [...inline, ...defined];
}

/** A target that points into the repository: no scheme, not a bare anchor. */
function isRelative(target: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('#');
}

test('the docs this test reads include the README, docs/ and the module READMEs', () => {
  const names = DOCS.map((f) => relative(ROOT, f));
  for (const expected of ['README.md', 'docs/architecture.md', 'docs/operations.md', 'docs/security.md', 'docs/testing.md']) {
    assert.ok(names.includes(expected), expected);
  }
});

test('links are read from inline links and reference definitions, not from code blocks', () => {
  const sample = ['See [a](docs/a.md#part) and [b](<b c.md> "title") and [web](https://x.test/y).', '[ref]: ../ref.md', '```', '[code](not-a-link.md)', '```'].join('\n');
  assert.deepEqual(linkTargets(sample), ['docs/a.md#part', 'b c.md', 'https://x.test/y', '../ref.md']);
});

test('every relative link in the Markdown resolves to a file or folder in the repository', () => {
  const dead: string[] = [];
  for (const file of DOCS) {
    for (const target of linkTargets(readFileSync(file, 'utf8')).filter(isRelative)) {
      const path = decodeURIComponent(target.split('#')[0]!);
      const resolved = resolve(dirname(file), path);
      if (!resolved.startsWith(ROOT + '/') || !existsSync(resolved)) dead.push(`${relative(ROOT, file)} → ${target}`);
    }
  }
  assert.deepEqual(dead, []);
});

test('README.md stays a front door: at most 10 KB', () => {
  const size = statSync(join(ROOT, 'README.md')).size;
  assert.ok(size <= README_MAX_BYTES, `README.md is ${size} bytes; move detail into docs/`);
});

test('nothing refers to tracker numbers or to documents outside the repository', () => {
  // Built from parts so this file does not match itself.
  const outside = new RegExp(['\\bissues? #?\\d+', '\\(#\\d+\\)', '\\.\\./shared', 'DESIGN' + '\\.md'].join('|'), 'i');
  const files = [
    ...DOCS,
    ...['src', 'test', 'scripts', 'packages', 'deploy'].flatMap((d) => sourcesUnder(join(ROOT, d))),
  ];
  const found: string[] = [];
  for (const file of files) {
    readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
      if (outside.test(line)) found.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(found, []);
});

/** Source and config files under a folder (TypeScript, YAML, JSON, shell), outside node_modules. */
function sourcesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name.startsWith('.')) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return /\.(ts|js|cjs|mjs|ya?ml|json|sh|py)$/.test(name) ? [path] : [];
  });
}

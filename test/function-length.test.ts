import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * No function in src/ passes 150 lines: a closure that long holds several concerns a
 * newcomer has to untangle, and each change makes it longer. Split it where a reader would look
 * (lifecycle, admission, timers, wiring) into plain functions or small factories of their own.
 */

const MAX_LINES = 150;
const root = new URL('..', import.meta.url).pathname;

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

const isFunction = (n: ts.Node): n is ts.FunctionLikeDeclaration =>
  ts.isFunctionDeclaration(n) || ts.isFunctionExpression(n) || ts.isArrowFunction(n) || ts.isMethodDeclaration(n) || ts.isConstructorDeclaration(n);

/** Every function of the file longer than `max` lines: `path:line name (lines)`. */
function longFunctions(path: string, max: number): string[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (isFunction(node)) {
      const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const lines = file.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
      if (lines > max) found.push(`${relative(root, path)}:${first + 1} ${node.name?.getText(file) ?? '(anonymous)'} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

test(`no function in src/ passes ${MAX_LINES} lines`, () => {
  const long = [...sourceFiles(join(root, 'src'))].flatMap((f) => longFunctions(f, MAX_LINES));
  assert.deepEqual(long, [], `split these where a newcomer would look:\n${long.join('\n')}`);
});

test('the check reports a function past its limit, with its place and length', () => {
  // The rule's own proof: at a limit of 10 lines, this file's longFunctions (15 lines) is reported.
  const path = join(root, 'test', 'function-length.test.ts');
  assert.ok(longFunctions(path, 10).some((f) => /^test\/function-length\.test\.ts:\d+ longFunctions \(\d+ lines\)$/.test(f)));
});

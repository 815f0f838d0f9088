import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * No numeric default hides inline in src/ (`opts.x ?? 5000`): a default sits beside its options
 * type in a named defaults object or constant (`runnerDefaults`, `jwksDefaults`, a setting's
 * field), where a reader and a test find it and one change moves every use. `?? 0` stays allowed:
 * it reads "none" (an absent count is zero), not a tuning choice. The few left below are not
 * defaults at all, each with its reason.
 */

const root = new URL('..', import.meta.url).pathname;

/** `file: expression` → why it is no default. */
const NOT_DEFAULTS: Record<string, string> = {
  'src/platform/http/errors.ts: fe.statusCode ?? 500': 'an error without a status is a server error by HTTP’s meaning',
  'src/platform/realtime/handshake.ts: this.byUser.get(userId) ?? 1': 'a count decremented on release: absent means this one',
  'src/platform/events/kafka-batch.ts: attempt ?? 1': 'a record not yet retried is on its first attempt',
  'src/platform/events/in-process-bus.ts: attempt ?? 1': 'a record not yet retried is on its first attempt',
};

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

/** Every `a ?? <non-zero number>` of the file: `path: expression`. */
function numericFallbacks(path: string): string[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken) {
      const right = ts.isParenthesizedExpression(node.right) ? node.right.expression : node.right;
      if (ts.isNumericLiteral(right) && Number(right.text.replaceAll('_', '')) !== 0) found.push(`${relative(root, path)}: ${node.getText(file)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

test('no numeric default inline in src/: each sits in a named defaults object beside its options', () => {
  const found = [...sourceFiles(join(root, 'src'))].flatMap(numericFallbacks);
  assert.deepEqual(
    found.filter((f) => !(f in NOT_DEFAULTS)),
    [],
  );
  // An entry whose code changed or went is taken out, so the list never excuses a new one.
  assert.deepEqual(Object.keys(NOT_DEFAULTS).filter((k) => !found.includes(k)), []);
});

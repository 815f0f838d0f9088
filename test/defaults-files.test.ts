import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * One defaults file per part (River's way): each kernel part and each module that has tunables
 * writes its default numbers in its defaults.ts, beside its options, and nowhere else. This reads
 * every other file of those parts and refuses a top-level constant that is a bare number (or
 * arithmetic on numbers) and a setting whose default is written as a literal instead of read from
 * defaults.ts. What is left below is no default at all — a bound of an input or a column, a protocol
 * fact, a product rule — each with its reason; an entry whose code went is taken out.
 */

const root = new URL('..', import.meta.url).pathname;

const NOT_DEFAULTS: Record<string, string> = {
  'src/platform/jobs/schedule.ts: JOB_NAME_MAX_LENGTH': 'the job name column',
  'src/platform/jobs/schedule.ts: EVERY_MAX_MS': "setTimeout's largest delay",
  'src/platform/jobs/job-state.ts: LAST_ERROR_MAX_LENGTH': 'last_error is varchar(512)',
  'src/platform/ops/api-schemas.ts: PAUSE_REASON_MAX': 'an input bound',
  'src/platform/ops/api-schemas.ts: BULK_MAX_ROWS': 'an input bound',
  'src/platform/realtime/handshake.ts: CLOSE_CODE_NORMAL': 'the WebSocket close code',
  'src/platform/realtime/connection.ts: CLOSE_CODE_NORMAL': 'the WebSocket close code',
  'src/platform/realtime/msgpack-protocol.ts: MAX_PREFIX_BYTES': "MessagePack's length prefix",
  'src/platform/realtime/protocol.ts: RECORD_SEPARATOR_BYTE': 'the SignalR record separator',
  'src/platform/realtime/protocol.ts: MAX_HUB_PROTOCOL_VERSION': 'the SignalR protocol version served',
  'src/platform/realtime/protocol.ts: MAX_ECHOED_NAME': 'an input bound',
  ...Object.fromEntries(
    ['Invocation', 'StreamItem', 'Completion', 'StreamInvocation', 'CancelInvocation', 'Ping', 'Close', 'Ack', 'Sequence'].map((t) => [`src/platform/realtime/protocol.ts: MessageType.${t}`, 'the SignalR message type']),
  ),
  'src/platform/realtime/hub-methods.ts: MAX_ECHOED_TARGET': 'an input bound',
  'src/platform/realtime/membership.ts: MAX_TRIES': 'an algorithm: a read, a retry after a race, then a refusal',
  'src/platform/events/envelope.ts: CONTRACT_VERSION_DEFAULT': "an event contract's version",
  'src/platform/events/envelope.ts: MAX_MESSAGE_ID': 'an input bound',
  'src/modules/identity/users/users.ts: NAME_MAX': 'an input bound',
  'src/modules/identity/roles/roles.ts: PERMISSION_CODE_MAX': 'an input bound',
  'src/modules/identity/roles/roles.ts: PERMISSIONS_MAX': 'an input bound',
  'src/modules/identity/assignments/access-events.ts: MAX_IDS_PER_READING': 'the UUIDv7 counter width',
  'src/modules/notifications/terminal-failures/routes.ts: MAX_PER_CALL': 'an input bound',
  'src/modules/notifications/api-schemas.ts: NOTIFICATION_DATA_MAX_BYTES': 'an input bound',
  'src/modules/notifications/channels.ts: FALLBACK.maxAttempts': 'a guard: a channel without its config row never sends',
  'src/modules/user-activity/stats/view-stats.ts: MAX_VIEW_DURATION_SECONDS': "the column's integer range",
  'src/modules/user-activity/views/views.ts: MAX_VIEWS_PER_SESSION': 'a product rule',
  'src/modules/user-activity/http/api-schemas.ts: ANONYMOUS_ID_MIN_LENGTH': 'an input bound',
  'src/modules/user-activity/http/api-schemas.ts: FILTER_SNAPSHOT_MAX_BYTES': 'an input bound',
  'src/modules/user-activity/sessions/sessions.ts: START_ATTEMPTS': 'an algorithm: a start, a retry after each of two races',
  'src/modules/user-activity/events.ts: CONTRACT_VERSION': "an event contract's version",
  'src/modules/messenger/chats/chats.ts: GROUP_MAX_PARTICIPANTS': 'a product rule',
  'src/modules/messenger/chats/chat-list-sql.ts: LAST_MESSAGE_PREVIEW_CHARS': 'a product rule',
  'src/modules/messenger/user-replica/routes.ts: RESYNC_MAX_USERS': 'an input bound',
  'src/modules/messenger/user-replica/apply.ts: MAX_WRITE_ATTEMPTS': 'an algorithm: the decision, again after a race, then without a phone',
  'src/modules/messenger/user-replica/rules.ts: NAME_MAX_LENGTH': 'an input bound',
  'src/modules/messenger/calls/calls.ts: CALL_RING_TIMEOUT_MS': 'a product rule',
  'src/modules/messenger/messages/send-queue.ts: batchQueueDefaults.minIntervalMs': 'the generic queue without spacing (0 = none); the messenger passes MESSENGER_DEFAULTS.sendMinIntervalMs',
  'src/modules/messenger/presence/presence.ts: PRESENCE_MAX_USERS': 'an input bound',
  'src/modules/messenger/messages/messages.ts: EDIT_WINDOW_SECONDS': 'a product rule',
  'src/modules/messenger/messages/rules.ts: FILE_NAME_MAX_CHARS': 'an input bound',
  'src/modules/messenger/messages/rules.ts: MESSAGE_MAX_CHARS': 'a product rule',
  'src/modules/messenger/messages/rules.ts: FILE_MAX_BYTES': 'a product rule',
  'src/modules/messenger/messages/rules.ts: FILE_ID_MAX_CHARS': 'an input bound',
  'src/modules/messenger/messages/reaction-rules.ts: REACTIONS_PER_USER_MAX': 'a product rule',
  'src/modules/messenger/messages/reaction-rules.ts: EMOJI_MAX_CHARS': 'an input bound',
  'src/modules/messenger/messages/replies.ts: MENTIONS_MAX': 'an input bound',
  'src/modules/messenger/messages/reply-preview.ts: REPLY_EXCERPT_CHARS': 'a product rule',
};

/** The parts: each folder of src/platform and src/modules that has a defaults.ts. */
const parts = ['src/platform', 'src/modules'].flatMap((base) =>
  readdirSync(join(root, base), { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(root, base, e.name, 'defaults.ts')))
    .map((e) => join(root, base, e.name)),
);

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.name.endsWith('.ts') && entry.name !== 'defaults.ts') yield path;
  }
}

/** A number, or arithmetic whose leaves are numbers (`5 * 60_000`, `1 << 20`, `2 ** 31 - 1`). */
function isBareNumber(node: ts.Expression): boolean {
  if (ts.isParenthesizedExpression(node)) return isBareNumber(node.expression);
  if (ts.isNumericLiteral(node)) return true;
  if (ts.isPrefixUnaryExpression(node)) return isBareNumber(node.operand as ts.Expression);
  return ts.isBinaryExpression(node) && isBareNumber(node.left) && isBareNumber(node.right);
}

/** `path: NAME` of each top-level const that is a bare number; `path: default NAME` of each setting with a literal default. */
function declaredNumbers(path: string): string[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const at = relative(root, path);
  const found: string[] = [];
  for (const statement of file.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const d of statement.declarationList.declarations) {
      if (!ts.isIdentifier(d.name) || !d.initializer) continue;
      if (isBareNumber(d.initializer)) found.push(`${at}: ${d.name.text}`);
      // An options object's fallbacks (`const fooDefaults = { timeoutMs: 5000 } as const`) are defaults too.
      let init: ts.Expression = d.initializer;
      while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init)) init = init.expression;
      if (ts.isObjectLiteralExpression(init)) {
        for (const p of init.properties) {
          if (ts.isPropertyAssignment(p) && isBareNumber(p.initializer)) found.push(`${at}: ${d.name.text}.${p.name.getText(file)}`);
        }
      }
    }
  }
  if (path.endsWith('settings.ts')) {
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyAssignment(node) && node.name.getText(file) === 'default' && (isBareNumber(node.initializer) || ts.isStringLiteral(node.initializer))) {
        const setting = node.parent.parent.parent;
        const name = ts.isPropertyAssignment(setting) ? setting.name.getText(file) : '?';
        // A duration written as a string ('5s') is a number too; other strings (an index name, a URL) are not.
        if (!ts.isStringLiteral(node.initializer) || /^\d+(ms|s|m|h|d)$/.test(node.initializer.text)) found.push(`${at}: default ${name}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}

test('each part declares its default numbers only in its defaults.ts', () => {
  assert.ok(parts.length >= 12, `the parts with a defaults.ts: ${parts.map((p) => relative(root, p)).join(', ')}`);
  const found = parts.flatMap((part) => [...sourceFiles(part)].flatMap(declaredNumbers));
  assert.deepEqual(found.filter((f) => !(f in NOT_DEFAULTS)), []);
  assert.deepEqual(Object.keys(NOT_DEFAULTS).filter((k) => !found.includes(k)), [], 'an entry whose code went is taken out');
});

test('each part checks the options built in code once, at construction, as loadConfig checks the settings at start', async () => {
  const { messengerModule } = await import('../src/modules/messenger/index.ts');
  const { notificationsModule } = await import('../src/modules/notifications/index.ts');
  const { identitySettingsFrom } = await import('../src/modules/identity/context.ts');
  const { createHub } = await import('../src/platform/realtime/index.ts');
  const { loadConfig } = await import('../src/config.ts');
  const { createLogger } = await import('../src/platform/observability/logger.ts');
  const { Registry } = await import('../src/platform/observability/metrics.ts');
  assert.throws(() => messengerModule({ sendBatchMax: 0 }), /invalid messenger options: messenger sendBatchMax: must be a whole number > 0 \(got 0\)/);
  assert.throws(() => notificationsModule({ retryBatchSize: 0 }), /invalid notifications options: notifications retryBatchSize: must be a whole number > 0 \(got 0\)/);
  assert.throws(() => identitySettingsFrom({ ...loadConfig({}), IDENTITY_ACCESS_FANOUT_BATCH_SIZE: 0 }), /invalid identity settings: IDENTITY_ACCESS_FANOUT_BATCH_SIZE/);
  assert.throws(
    () => createHub({ secret: 'x'.repeat(32), registry: new Registry(), logger: createLogger('silent'), handshakeTimeoutMs: 0 }),
    /invalid hub options: hub option handshakeTimeoutMs: must be > 0 \(got 0\)/,
  );
  // The defaults themselves pass their own check.
  assert.doesNotThrow(() => messengerModule());
  assert.doesNotThrow(() => notificationsModule());
});

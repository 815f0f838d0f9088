import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { FRAMES_PATH, frameSchemas, renderFrames } from '../scripts/realtime-frames.ts';
import { MESSENGER_CARRIED_KINDS, MESSENGER_PUSH_KINDS, eventNameOf } from '../src/modules/messenger/model/push-kinds.ts';

/**
 * docs/realtime-frames.schema.json is what the frames' TypeBox schemas generate (the payload
 * builders are checked against the same schemas in payloads.test.ts), and it names every frame the
 * dispatcher sends plus presence, typing and notification_created.
 */

test('docs/realtime-frames.schema.json is current: `npm run realtime-frames` regenerates it', () => {
  assert.equal(readFileSync(FRAMES_PATH, 'utf8'), renderFrames(), 'run `npm run realtime-frames`');
});

test('every hub event the dispatcher, presence and typing send has a schema', () => {
  // The messenger's kinds (referenced and carried) and the notifications' carried one.
  const sent = [...MESSENGER_PUSH_KINDS.filter((k) => k !== 'UserDeactivated'), ...MESSENGER_CARRIED_KINDS, 'NotificationStatusChanged'].map(eventNameOf);
  assert.deepEqual([...sent, 'presence_changed', 'typing', 'notification_created'].filter((e) => !(e in frameSchemas())), []);
});

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MESSENGER_PUSH_KINDS, eventNameOf, type MessengerPushKind } from '../../../../src/modules/messenger/model/push-kinds.ts';
import { buildDelivery, emptyRefs, type OutboxRowRef, type RealtimeRefs } from '../../../../src/modules/messenger/realtime-dispatch/payloads.ts';
import { Value } from '@sinclair/typebox/value';
import { frameSchemas } from '../../../../scripts/realtime-frames.ts';

const FRAMES = frameSchemas();

const id = () => randomUUID();
const chatId = id();
const [alice, bob, carol] = [id(), id(), id()];
const at = new Date('2026-03-01T10:00:00Z');

/** One entity of every kind a row can point at. */
function fixtures(): { refs: RealtimeRefs; ids: Record<string, string> } {
  const refs = emptyRefs();
  const ids = { message: id(), participant: id(), reaction: id(), event: id(), contact: id(), blacklist: id(), call: id(), conference: id(), roster: id(), recording: id() };
  refs.messages.set(ids.message, { id: ids.message, chatId, seq: 7, senderUserId: alice, kind: 'Text', body: 'secret body', fileMeta: null, cardText: null, sentAt: at, editedAt: null, deletedAt: null, clientMessageId: id(), mentionedUserIds: [], replyTo: null });
  refs.reactions.set(`${ids.reaction}:`, { id: ids.reaction, chatId, messageId: ids.message, userId: bob, emoji: '👍', added: true, count: 2 });
  refs.participants.set(ids.participant, { id: ids.participant, chatId, userId: bob, status: 'Active', lastReadSeq: 7 });
  refs.chatEvents.set(ids.event, { id: ids.event, chatId, kind: 'Renamed', actorUserId: alice, subjectUserId: null, subjectActive: false, createdAt: at });
  refs.contacts.set(ids.contact, { id: ids.contact, requesterUserId: alice, addresseeUserId: bob, status: 'Pending', removedByUserId: null });
  refs.blacklist.set(ids.blacklist, { id: ids.blacklist, ownerUserId: alice, blockedUserId: bob, status: 'Blocked' });
  refs.sessions.set(ids.call, { id: ids.call, sessionKind: 'Direct', chatId: null, initiatorUserId: alice, calleeUserId: bob, media: 'Video', status: 'Ringing', roomName: 'room-call', endedByUserId: null });
  refs.sessions.set(ids.conference, { id: ids.conference, sessionKind: 'Conference', chatId, initiatorUserId: alice, calleeUserId: null, media: 'Audio', status: 'Active', roomName: 'room-conf', endedByUserId: null });
  refs.roster.set(ids.roster, { id: ids.roster, sessionId: ids.conference, userId: carol, status: 'Joined', screenSharing: true });
  refs.recordings.set(ids.recording, { id: ids.recording, sessionId: ids.conference, status: 'Available', errorCode: null });
  refs.chatMembers.set(chatId, [alice, bob, carol]);
  return { refs, ids };
}

const MESSAGE_KEYS = ['ChatId', 'MessageId', 'Seq', 'SenderUserId', 'Kind', 'SentAt', 'EditedAt', 'Deleted', 'ClientMessageId', 'MentionedUserIds', 'ReplyTo', 'Body'];
const DIRECT_KEYS = ['CallId', 'SessionKind', 'ChatId', 'CallerUserId', 'CalleeUserId', 'Media', 'Status', 'RoomName'];
const CONF_KEYS = ['ConferenceId', 'SessionKind', 'ChatId', 'StartedByUserId', 'Media', 'Status', 'RoomName'];
const ROSTER_KEYS = [...CONF_KEYS, 'UserId', 'ParticipantStatus', 'ScreenSharing'];
const RECORDING_KEYS = [...CONF_KEYS, 'RecordingId', 'RecordingStatus', 'ErrorCode'];

type Case = { row: Partial<OutboxRowRef>; ref: string; groups: string[]; keys: string[]; join?: boolean };

/** Every kind as its owner operation writes it: where it goes and the shape of what it carries. */
function cases(ids: Record<string, string>): Record<MessengerPushKind, Case> {
  const chat = [`chat:${chatId}`];
  const user = (u: string) => [`user:${u}`];
  const members = [alice, bob, carol].map((u) => `user:${u}`);
  const msg = { targetKind: 'ChatGroup', chatId, seq: 7 } as const;
  const conf = { targetKind: 'ChatGroup', chatId, sessionKind: 'Conference' } as const;
  const direct = (to: string) => ({ targetKind: 'User', targetUserId: to, sessionKind: 'Direct' }) as const;
  return {
    MessageReceived: { row: { ...msg, messageId: ids.message }, ref: '', groups: chat, keys: MESSAGE_KEYS },
    MessageEdited: { row: { ...msg, messageId: ids.message }, ref: '', groups: chat, keys: MESSAGE_KEYS },
    MessageDeleted: { row: { ...msg, messageId: ids.message }, ref: '', groups: chat, keys: ['ChatId', 'MessageId', 'Seq', 'DeletedAt'] },
    ReadReceiptUpdated: { row: msg, ref: ids.participant!, groups: chat, keys: ['ChatId', 'UserId', 'LastReadSeq'] },
    ReactionChanged: { row: { targetKind: 'ChatGroup', chatId, messageId: ids.message }, ref: ids.reaction!, groups: chat, keys: ['ChatId', 'MessageId', 'UserId', 'Emoji', 'Added', 'Count'] },
    ChatUpdated: { row: { targetKind: 'ChatGroup', chatId }, ref: ids.event!, groups: chat, keys: ['ChatId', 'EventId', 'Change', 'ActorUserId', 'SubjectUserId', 'OccurredAt'] },
    ContactRequestReceived: { row: { targetKind: 'User', targetUserId: bob }, ref: ids.contact!, groups: user(bob), keys: ['ContactId', 'UserId', 'Status'] },
    ContactRequestAccepted: { row: { targetKind: 'User', targetUserId: alice }, ref: ids.contact!, groups: user(alice), keys: ['ContactId', 'UserId', 'Status'] },
    ContactRemoved: { row: { targetKind: 'User', targetUserId: bob }, ref: ids.contact!, groups: user(bob), keys: ['ContactId', 'UserId', 'Status'] },
    CallInvited: { row: direct(bob), ref: ids.call!, groups: user(bob), keys: DIRECT_KEYS, join: true },
    CallAnswered: { row: direct(alice), ref: ids.call!, groups: user(alice), keys: DIRECT_KEYS },
    CallDeclined: { row: direct(alice), ref: ids.call!, groups: user(alice), keys: DIRECT_KEYS },
    CallMissed: { row: direct(alice), ref: ids.call!, groups: user(alice), keys: DIRECT_KEYS },
    CallCancelled: { row: direct(bob), ref: ids.call!, groups: user(bob), keys: DIRECT_KEYS },
    CallEnded: { row: direct(bob), ref: ids.call!, groups: user(bob), keys: DIRECT_KEYS },
    ConferenceInvited: { row: { targetKind: 'User', targetUserId: carol, chatId, sessionKind: 'Conference' }, ref: ids.conference!, groups: user(carol), keys: CONF_KEYS, join: true },
    ConferenceStarted: { row: conf, ref: ids.conference!, groups: members, keys: CONF_KEYS, join: true },
    ConferenceEnded: { row: conf, ref: ids.conference!, groups: chat, keys: CONF_KEYS },
    ConferenceParticipantJoined: { row: conf, ref: ids.roster!, groups: chat, keys: ROSTER_KEYS },
    ConferenceParticipantLeft: { row: conf, ref: ids.roster!, groups: chat, keys: ROSTER_KEYS },
    RecordingStarted: { row: conf, ref: ids.recording!, groups: chat, keys: RECORDING_KEYS },
    RecordingStopped: { row: conf, ref: ids.recording!, groups: chat, keys: RECORDING_KEYS },
    RecordingAvailable: { row: conf, ref: ids.recording!, groups: chat, keys: RECORDING_KEYS },
    RecordingFailed: { row: conf, ref: ids.recording!, groups: chat, keys: RECORDING_KEYS },
    ScreenShareStarted: { row: conf, ref: ids.roster!, groups: chat, keys: ROSTER_KEYS },
    ScreenShareStopped: { row: conf, ref: ids.roster!, groups: chat, keys: ROSTER_KEYS },
    BlacklistChanged: { row: { targetKind: 'User', targetUserId: alice }, ref: ids.blacklist!, groups: user(alice), keys: ['EntryId', 'BlockedUserId', 'Status'] },
    // Sends nothing: it closes the user's connections (see the test below).
    UserDeactivated: { row: { targetKind: 'User', targetUserId: carol }, ref: '', groups: [], keys: [] },
  };
}

const rowOf = (kind: MessengerPushKind, c: Case): OutboxRowRef => ({
  id: id(),
  kind,
  targetKind: 'ChatGroup',
  chatId: null,
  targetUserId: null,
  messageId: null,
  refId: c.ref || null,
  sessionKind: null,
  seq: null,
  ...c.row,
});

/** Keys that would mean a secret or PII in a payload (RoomName is a room reference, not a person's name). */
const SECRET_KEYS = /token|credential|password|secret|phone|firstname|lastname|^name$|join/i;

describe('realtime payloads: one builder per kind the messenger owns', () => {
  const { refs, ids } = fixtures();
  const table = cases(ids);

  test('the table covers all 28 kinds', () => {
    assert.equal(MESSENGER_PUSH_KINDS.length, 28);
    assert.deepEqual(Object.keys(table).sort(), [...MESSENGER_PUSH_KINDS].sort());
  });

  for (const kind of MESSENGER_PUSH_KINDS) {
    test(`${kind}: group, snake_case event, payload shape, no secrets`, () => {
      const c = table[kind];
      const built = buildDelivery(rowOf(kind, c), refs);
      assert.ok(built.ok, `built: ${JSON.stringify(built)}`);
      const { sends } = built.delivery;
      assert.deepEqual(sends.map((s) => s.group).sort(), [...c.groups].sort());
      for (const s of sends) {
        assert.equal(s.event, eventNameOf(kind));
        assert.match(s.event, /^[a-z]+(_[a-z]+)+$/);
        assert.deepEqual(Object.keys(s.payload).sort(), [...c.keys].sort());
        // The payload is what docs/realtime-frames.schema.json publishes for its event.
        const schema = FRAMES[s.event];
        assert.ok(schema, `a published schema for ${s.event}`);
        assert.deepEqual([...Value.Errors(schema, s.payload)].map((e) => `${e.path}: ${e.message}`), [], `${s.event} matches its schema`);
        // Only message kinds carry a body, and only to chat:{ChatId}; nothing carries a token or PII.
        const json = JSON.stringify(s.payload);
        if (!['MessageReceived', 'MessageEdited'].includes(kind)) assert.doesNotMatch(json, /secret body/);
        else assert.match(s.group, /^chat:/);
        for (const key of Object.keys(s.payload)) assert.doesNotMatch(key, SECRET_KEYS);
        // A join model is minted per recipient at delivery, for the invite kinds only.
        assert.equal(s.joinFor !== undefined, c.join === true);
        if (s.joinFor) assert.equal(s.group, `user:${s.joinFor.userId}`);
      }
    });
  }

  test('UserDeactivated closes the connections of a user still inactive, and of nobody once the user is active again', () => {
    const row = rowOf('UserDeactivated', { row: { targetKind: 'User', targetUserId: carol }, ref: '', groups: [], keys: [] });
    const still = emptyRefs();
    still.inactiveUsers.add(carol);
    assert.deepEqual(buildDelivery(row, still), { ok: true, delivery: { sends: [], disconnect: carol } });
    assert.deepEqual(buildDelivery(row, emptyRefs()), { ok: true, delivery: { sends: [] } });
  });

  test('an invite whose session is over goes out with its final Status and no join model; one still open gets one per recipient', () => {
    for (const kind of ['CallInvited', 'ConferenceInvited', 'ConferenceStarted'] as const) {
      for (const status of ['Ringing', 'Active', 'Declined', 'Cancelled', 'Missed', 'Ended']) {
        const r = fixtures();
        const c = cases(r.ids)[kind];
        r.refs.sessions.get(c.ref)!.status = status;
        const built = buildDelivery(rowOf(kind, c), r.refs);
        assert.ok(built.ok, `${kind} ${status}`);
        assert.deepEqual(built.delivery.sends.map((s) => s.group).sort(), [...c.groups].sort(), `${kind} ${status}: still delivered to every recipient`);
        const open = status === 'Ringing' || status === 'Active';
        for (const s of built.delivery.sends) {
          assert.equal(s.payload.Status, status);
          assert.equal(s.joinFor !== undefined, open, `${kind} ${status}: a join model only while the session is open`);
        }
      }
    }
  });

  test('names are snake_case of the enum value', () => {
    assert.equal(eventNameOf('MessageReceived'), 'message_received');
    assert.equal(eventNameOf('ConferenceParticipantJoined'), 'conference_participant_joined');
    assert.equal(eventNameOf('BlacklistChanged'), 'blacklist_changed');
  });

  test('SessionKind picks the contract: Direct → the 1:1 call contract to user:{Target}; Conference → the conference contract to chat:{ChatId}', () => {
    const direct = buildDelivery(rowOf('CallInvited', { row: { targetKind: 'User', targetUserId: bob, sessionKind: 'Direct' }, ref: ids.call!, groups: [], keys: [] }), refs);
    assert.ok(direct.ok);
    assert.equal(direct.delivery.sends[0]!.group, `user:${bob}`);
    assert.equal(direct.delivery.sends[0]!.payload.CallId, ids.call);
    const conference = buildDelivery(rowOf('CallInvited', { row: { targetKind: 'ChatGroup', chatId, sessionKind: 'Conference' }, ref: ids.conference!, groups: [], keys: [] }), refs);
    assert.ok(conference.ok);
    // Personal join models go to each chat member; the contract is the conference one.
    assert.deepEqual(conference.delivery.sends.map((s) => s.group).sort(), [alice, bob, carol].map((u) => `user:${u}`).sort());
    assert.equal(conference.delivery.sends[0]!.payload.ConferenceId, ids.conference);
    assert.equal(conference.delivery.sends[0]!.payload.ChatId, chatId);
  });

  test('a deleted message is pushed as a tombstone without its body', () => {
    const r = fixtures();
    const m = r.refs.messages.get(r.ids.message!)!;
    m.deletedAt = at;
    const built = buildDelivery(rowOf('MessageReceived', { row: { targetKind: 'ChatGroup', chatId, messageId: m.id }, ref: '', groups: [], keys: [] }), r.refs);
    assert.ok(built.ok);
    assert.equal(built.delivery.sends[0]!.payload.Deleted, true);
    assert.equal('Body' in built.delivery.sends[0]!.payload, false);
  });

  test('file and card messages carry FileMeta / CardText instead of Body', () => {
    const r = fixtures();
    const m = r.refs.messages.get(r.ids.message!)!;
    Object.assign(m, { kind: 'File', body: null, fileMeta: { FileId: 'f1', Size: 10 } });
    const file = buildDelivery(rowOf('MessageReceived', { row: { targetKind: 'ChatGroup', chatId, messageId: m.id }, ref: '', groups: [], keys: [] }), r.refs);
    assert.ok(file.ok);
    assert.deepEqual(file.delivery.sends[0]!.payload.FileMeta, { FileId: 'f1', Size: 10 });
    Object.assign(m, { kind: 'Card', fileMeta: null, cardText: 'card' });
    const card = buildDelivery(rowOf('MessageReceived', { row: { targetKind: 'ChatGroup', chatId, messageId: m.id }, ref: '', groups: [], keys: [] }), r.refs);
    assert.ok(card.ok);
    assert.equal(card.delivery.sends[0]!.payload.CardText, 'card');
  });

  test('a row whose entity no longer exists is not deliverable (RTO_REF_NOT_FOUND), for every kind that points at one', () => {
    // UserDeactivated points at no entity: a user not inactive any more is simply not disconnected.
    for (const kind of MESSENGER_PUSH_KINDS.filter((k) => k !== 'UserDeactivated')) {
      const built = buildDelivery(rowOf(kind, table[kind]), emptyRefs());
      assert.deepEqual(built, { ok: false, code: 'RTO_REF_NOT_FOUND' }, kind);
    }
  });

  test('member events carry the group change: added (still active) joins, removed (still gone) leaves', () => {
    const r = fixtures();
    const e = r.refs.chatEvents.get(r.ids.event!)!;
    Object.assign(e, { kind: 'ParticipantAdded', subjectUserId: carol, subjectActive: true });
    const row = rowOf('ChatUpdated', { row: { targetKind: 'ChatGroup', chatId }, ref: e.id, groups: [], keys: [] });
    let built = buildDelivery(row, r.refs);
    assert.ok(built.ok);
    assert.deepEqual(built.delivery.membership, [{ op: 'join', userId: carol, group: `chat:${chatId}` }]);
    // Added, then removed before the push went out: the late row must not put the user back.
    e.subjectActive = false;
    built = buildDelivery(row, r.refs);
    assert.ok(built.ok);
    assert.equal(built.delivery.membership, undefined);
    Object.assign(e, { kind: 'ParticipantRemoved' });
    built = buildDelivery(row, r.refs);
    assert.ok(built.ok);
    assert.deepEqual(built.delivery.membership, [{ op: 'leave', userId: carol, group: `chat:${chatId}` }]);
    // A new chat: every member active at delivery joins (its open connections did not know the chat yet).
    Object.assign(e, { kind: 'Created', subjectUserId: null });
    built = buildDelivery(row, r.refs);
    assert.ok(built.ok);
    assert.deepEqual(built.delivery.membership?.map((m) => m.userId), [alice, bob, carol]);
  });
});

/**
 * What a push row becomes at delivery: the frames to send where, the group changes to replay
 * first, and the user to disconnect. Built by the kind's owner from the row and what its load step
 * read (a carried kind: by the push part from the stored payload).
 */

export type Payload = Record<string, unknown>;

export interface HubSend<J = unknown> {
  group: string;
  event: string;
  payload: Payload;
  /** A personal part minted at delivery for this send (the owner's mintJoin), added as `Join`; never stored. */
  joinFor?: J;
}

export interface MembershipOp {
  op: 'join' | 'leave';
  userId: string;
  group: string;
}

export interface Delivery<J = unknown> {
  /**
   * Group changes replayed on delivery (the owner also applies them right after its commit), before
   * the sends: a member added sees its own frame, a removed one nothing more.
   */
  membership?: MembershipOp[];
  sends: HubSend<J>[];
  /** Close every hub connection of this user, on every replica (with the owner's disconnectReason). */
  disconnect?: string;
}

export type BuildResult<J = unknown> = { ok: true; delivery: Delivery<J> } | { ok: false; code: string };

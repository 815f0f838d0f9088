import type { Db } from '../db/index.ts';
import { enqueueCarried } from './outbox-sql.ts';
import { eventNameOf, type UserFrame, type UserFrames } from './types.ts';

/**
 * The push part's port towards the modules (ModuleDeps.push): each module registers the kinds it
 * owns, and writes frames of its carried kinds to users through `userFrames` in its own transaction.
 * Kinds are registered while the modules are built, before anything is written or pushed.
 */

/** The kinds one module owns. */
export interface KindRegistration {
  /** The module that owns them (for the error naming a kind registered twice). */
  owner: string;
  /**
   * Kinds whose row carries its frame's payload (column `payload`) instead of references: the frame
   * announces a moment (a status and its version then), which rebuilding from the entity later would
   * lose. Only ids, enums, error codes and times — never a body, a name or a token. Pushed to
   * user:{UserId} as written, under the kind's event name (NotificationStatusChanged →
   * notification_status_changed).
   */
  carried?: readonly string[];
}

export interface Push {
  registerKinds(registration: KindRegistration): void;
  /** Frames of registered carried kinds to users, in the caller's transaction, in the order each user is to get them. */
  userFrames: UserFrames;
  /** Whether `kind` is a registered carried kind. */
  isCarried(kind: string): boolean;
}

export function createPush(): Push {
  const owners = new Map<string, string>();
  const carriedByEvent = new Map<string, string>();

  function own(kind: string, owner: string): void {
    const other = owners.get(kind);
    // A programming error at start: two modules cannot both build one kind's frames.
    if (other !== undefined) throw new Error(`push kind ${kind} is registered by ${other} and ${owner}`);
    owners.set(kind, owner);
  }

  return {
    registerKinds(registration) {
      for (const kind of registration.carried ?? []) {
        own(kind, registration.owner);
        carriedByEvent.set(eventNameOf(kind), kind);
      }
    },
    async userFrames(tx: Db, frames: readonly UserFrame[], now: Date): Promise<void> {
      const rows = frames.map((f) => {
        const kind = carriedByEvent.get(f.event);
        // A programming error, not input: only the carried kinds a module registered may go this way.
        if (!kind) throw new Error(`the realtime outbox carries no frame named ${f.event}`);
        return { kind, targetUserId: f.userId, payload: f.payload };
      });
      await enqueueCarried(tx, rows, now);
    },
    isCarried: (kind) => carriedByEvent.has(eventNameOf(kind)),
  };
}

import { sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/index.ts';
import { userGroup } from '../realtime/index.ts';
import { claimReadsProblems, claimReadsSql, type ClaimReads, type ClaimReadsSql, type OwnerClaimReads } from './claim-reads.ts';
import type { BuildResult } from './delivery.ts';
import { enqueueCarried, kindsOf, REALTIME_OUTBOX_CHANNEL, realtimeInsert, runInsert, type NewPushRow, type PushRows } from './outbox-sql.ts';
import { REF_NOT_FOUND } from './rules.ts';
import { addStreamEvent, newStreamEventSchema, type StreamEventSchema } from './stream-schema.ts';
import { eventNameOf, type PushRow, type UserFrame, type UserFrames } from './types.ts';

/**
 * The push part's port towards the modules (ModuleDeps.push): each module registers the kinds it
 * owns — carried ones (the row holds the frame) or referenced ones with their load and build steps —
 * and writes frames of its carried kinds to users through `userFrames` in its own transaction. Kinds
 * are registered while the modules are built, before anything is written or pushed. The dispatcher
 * and the event stream read the registrations (PushKinds); this part knows no kind itself.
 */

/** Kinds built at delivery from their row's references by the module that owns them. */
export interface ReferencedKinds<R = unknown, J = unknown> {
  kinds: readonly string[];
  /** Reads what a batch of rows points at (outside any transaction), once per batch; rows of other owners' kinds are among them and ignored. */
  load(db: Db, rows: readonly PushRow[]): Promise<R>;
  /** One row → what to push where (pure), or the code it is quarantined with. */
  build(row: PushRow, refs: R): BuildResult<J>;
  /** Mints a send's personal part at delivery (`joinFor`), added to its payload as `Join`. */
  mintJoin?(joinFor: J): Promise<unknown>;
  /** The close reason when a delivery disconnects a user. */
  disconnectReason?: string;
  /** What the claim statement reads beside this owner's rows, declared as names (claim-reads.ts): push writes the SQL. */
  claimReads?: ClaimReads;
}

/** The kinds one module owns. */
export interface KindRegistration<R = unknown, J = unknown> {
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
  referenced?: ReferencedKinds<R, J>;
  /**
   * Refuses a user the whole event stream by throwing (an AppError with the module's code): the
   * messenger refuses its blocked and archived users, as on its own routes.
   */
  refuseReader?: (db: Db, userId: string) => Promise<void>;
  /** The codes refuseReader refuses with (403), which the API document lists on the stream. */
  refuseReaderCodes?: readonly string[];
  /**
   * The frame each kind pushes, by kind: its payload's JSON Schema (with a title, its name in the
   * API document), which the event stream's answer is documented with (stream-schema.ts).
   */
  frames?: Readonly<Record<string, object>>;
}

/** The registrations as the dispatcher and the event stream read them. */
export interface PushKinds {
  /** Every owner's declared claim reads as the claim statement's parts (written once, after the registrations). */
  claimReads(): ClaimReadsSql;
  /** Every owner's load step over the batch, at once; `build` takes what this returns. */
  load(db: Db, rows: readonly PushRow[]): Promise<unknown>;
  build(row: PushRow, refs: unknown): BuildResult;
  mintJoin(kind: string, joinFor: unknown): Promise<unknown>;
  disconnectReason(kind: string): string;
  /** Every registered refusal of a stream reader, in registration order; throws the first. */
  refuseReader(db: Db, userId: string): Promise<void>;
  /** Their codes (403), for the API document. */
  readerRefusalCodes(): readonly string[];
  /** Every registered kind, carried and referenced, in registration order (the runbook routes' filter). */
  names(): readonly string[];
  /** An event of the stream, one variant per registered frame: the API document's description of it. */
  readonly streamEvent: StreamEventSchema;
}

export interface Push {
  registerKinds<R, J>(registration: KindRegistration<R, J>): void;
  /** Frames of registered carried kinds to users, in the caller's transaction, in the order each user is to get them. */
  userFrames: UserFrames;
  /**
   * The one writer of rows of referenced kinds: their INSERT into the outbox as a statement fragment,
   * for the owner's transaction after its row locks (so the UUIDv7 ids follow commit order) — run by
   * `enqueue`, or inside the owner's own statement (a message send writes its message and its row in
   * one round trip; that statement then wakes the dispatcher with `wakeAtCommit`).
   * Throws, before anything is written, for a kind no module registered as referenced.
   */
  insert(rows: PushRows, now: Date): SQL;
  /**
   * The NOTIFY that wakes the dispatchers when the owner's statement commits, for a statement that
   * wrote rows with `insert` itself (`payload`: wakePayload(), so this replica, woken in-process, is skipped).
   */
  wakeAtCommit(payload: string): SQL;
  /** Runs `insert` in the owner's transaction and wakes the dispatcher at commit (NOTIFY), in one statement. */
  enqueue(tx: Db, rows: readonly NewPushRow[], now: Date): Promise<void>;
  /** The registered kinds, for the dispatcher and the event stream. */
  kinds: PushKinds;
  /** Whether any module registered a kind (the dispatcher and retention run only then). */
  hasKinds(): boolean;
  /**
   * After a transaction that wrote rows commits: wakes this replica's dispatcher at once. The
   * transaction's own NOTIFY carries `wakePayload()`, so it wakes only the other replicas.
   */
  wake(): void;
  wakePayload(): string;
  /** The dispatch job hands over its in-process wake and its NOTIFY payload (jobs.ts). */
  connectWake(wake: () => void, payload: string): void;
}

/** LastError of a row whose kind no module registered (a module taken out while its rows wait). */
export const KIND_NOT_REGISTERED = 'RTO_KIND_NOT_REGISTERED';

/** The hub group of a row addressed to a chat (seed 000: chat:{ChatId}). */
export const chatGroupOf = (chatId: string): string => `chat:${chatId}`;

const KIND_NAME = /^[A-Z][A-Za-z]{0,31}$/;
const DISCONNECT_REASON = 'disconnected';

export function createPush(): Push {
  const owners = new Map<string, string>();
  const carriedByEvent = new Map<string, string>();
  /** A carried kind → its hub event name. */
  const carriedEvent = new Map<string, string>();
  const referenced: ReferencedKinds[] = [];
  /** A referenced kind → its owner's index in `referenced`. */
  const ownerIndex = new Map<string, number>();
  const declaredReads: OwnerClaimReads[] = [];
  let reads: ClaimReadsSql | undefined;
  const readerRefusals: ((db: Db, userId: string) => Promise<void>)[] = [];
  const readerRefusalCodes: string[] = [];

  function own(kind: string, owner: string): void {
    // Programming errors at start: a kind is one owner's, and its name goes into SQL text.
    if (!KIND_NAME.test(kind)) throw new Error(`push kind ${JSON.stringify(kind)} of ${owner} is not a kind name`);
    const other = owners.get(kind);
    if (other !== undefined) throw new Error(`push kind ${kind} is registered by ${other} and ${owner}`);
    owners.set(kind, owner);
  }

  const missing: BuildResult = { ok: false, code: REF_NOT_FOUND };
  const unregistered: BuildResult = { ok: false, code: KIND_NOT_REGISTERED };

  const kinds: PushKinds = {
    claimReads: () => (reads ??= claimReadsSql(declaredReads)),
    load: (db, rows) =>
      referenced.length === 1 ? referenced[0]!.load(db, rows) : Promise.all(referenced.map((r) => r.load(db, rows))),
    build(row, refs) {
      const event = carriedEvent.get(row.kind);
      if (event !== undefined) {
        // Carried: the frame as its owner committed it, only ever to its one user.
        return row.targetKind === 'User' && row.payload ? { ok: true, delivery: { sends: [{ group: userGroup(row.targetUserId!), event, payload: row.payload }] } } : missing;
      }
      const i = ownerIndex.get(row.kind);
      if (i === undefined) return unregistered;
      return referenced[i]!.build(row, referenced.length === 1 ? refs : (refs as unknown[])[i]);
    },
    mintJoin(kind, joinFor) {
      const mint = referenced[ownerIndex.get(kind) ?? -1]?.mintJoin;
      if (!mint) return Promise.reject(new Error(`push kind ${kind} has no join minter`));
      return mint(joinFor);
    },
    disconnectReason: (kind) => referenced[ownerIndex.get(kind) ?? -1]?.disconnectReason ?? DISCONNECT_REASON,
    async refuseReader(db, userId) {
      for (const refuse of readerRefusals) await refuse(db, userId);
    },
    readerRefusalCodes: () => [...new Set(readerRefusalCodes)],
    names: () => [...owners.keys()],
    streamEvent: newStreamEventSchema(),
  };

  function insert(rows: PushRows, now: Date): SQL {
    for (const kind of kindsOf(rows)) {
      // A programming error, not input: a module writes only the referenced kinds it registered.
      if (!ownerIndex.has(kind)) throw new Error(`push kind ${JSON.stringify(kind)} is not registered as referenced by any module; the realtime outbox refuses it`);
    }
    return realtimeInsert(rows, now);
  }

  let wake = () => {};
  let wakePayload = '';

  return {
    hasKinds: () => owners.size > 0,
    wake: () => wake(),
    wakePayload: () => wakePayload,
    connectWake(w, payload) {
      wake = w;
      wakePayload = payload;
    },
    registerKinds<R, J>(registration: KindRegistration<R, J>) {
      const { owner } = registration;
      for (const kind of registration.carried ?? []) {
        own(kind, owner);
        const event = eventNameOf(kind);
        carriedByEvent.set(event, kind);
        carriedEvent.set(kind, event);
      }
      const ref = registration.referenced as ReferencedKinds | undefined;
      if (ref) {
        for (const kind of ref.kinds) {
          own(kind, owner);
          ownerIndex.set(kind, referenced.length);
        }
        referenced.push(ref);
        if (ref.claimReads) {
          // Names only (push writes the SQL from them), and only the owner's own kinds.
          const problems = claimReadsProblems(owner, ref.kinds, ref.claimReads);
          if (problems.length > 0) throw new Error(`invalid push claim reads: ${problems.join('; ')}`);
          declaredReads.push({ kinds: ref.kinds, reads: ref.claimReads });
          reads = undefined;
        }
      }
      if (registration.refuseReader) readerRefusals.push(registration.refuseReader);
      readerRefusalCodes.push(...(registration.refuseReaderCodes ?? []));
      for (const [kind, frame] of Object.entries(registration.frames ?? {})) {
        if (owners.get(kind) !== owner) throw new Error(`${owner} registers a frame for ${kind}, a kind it does not register`);
        addStreamEvent(kinds.streamEvent, kind, frame);
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
    insert,
    wakeAtCommit: (payload) => sql`pg_notify(${sql.raw(`'${REALTIME_OUTBOX_CHANNEL}'`)}, ${payload}::text)`,
    async enqueue(tx, rows, now) {
      if (rows.length > 0) await runInsert(tx, insert(rows, now));
    },
    kinds,
  };
}

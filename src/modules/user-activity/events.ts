import { TOPICS } from '../../event-topics.ts';
import type { NewEvent } from '../../platform/outbox/index.ts';

/**
 * Integration-event contracts of user-activity (seed 001 step 6; session.md / property-object-view.md).
 * Payload fields are PascalCase as the seed spells them. Device data (IpAddress, UserAgent) is never
 * part of a payload.
 */

export const SESSION_ENDED_EVENT = 'SessionEndedKafkaEvent';
export const PROPERTY_OBJECT_VIEW_ENDED_EVENT = 'PropertyObjectViewEndedKafkaEvent';
export const CONTRACT_VERSION = 1;

export interface SessionEndedPayload {
  SessionId: string;
  AnonymousId: string;
  UserId: string | null;
  CreatedAt: string;
  LastActivityAt: string;
  DurationSeconds: number;
}

export interface PropertyObjectViewEndedPayload {
  PropertyObjectViewId: string;
  PropertyObjectId: string;
  SessionId: string;
  AnonymousId: string;
  /** The session's UserId at close time (a link after the view opened counts). */
  UserId: string | null;
  ViewSource: string;
  /** = the view's CreatedAt. */
  ViewedAt: string;
  LastActivityAt: string;
  DurationSeconds: number;
  FilterSnapshot: unknown;
}

/** A session as it is after the close transition. */
export interface ClosedSession {
  id: string;
  anonymousId: string;
  userId: string | null;
  createdAt: Date;
  lastActivityAt: Date;
  endedAt: Date;
  durationSeconds: number;
}

/** A view after the close transition, with what its payload needs from its session. */
export interface ClosedView {
  id: string;
  sessionId: string;
  propertyObjectId: string;
  viewSource: string;
  filterSnapshot: unknown;
  createdAt: Date;
  lastActivityAt: Date;
  endedAt: Date;
  durationSeconds: number;
}

export interface SessionOwner {
  anonymousId: string;
  userId: string | null;
}

export function sessionEndedEvent(s: ClosedSession, correlationId: string | null): NewEvent<SessionEndedPayload> {
  return {
    topic: TOPICS.sessionEnded,
    eventType: SESSION_ENDED_EVENT,
    contractVersion: CONTRACT_VERSION,
    aggregateType: 'Session',
    aggregateId: s.id,
    occurredAt: s.endedAt,
    correlationId,
    payload: {
      SessionId: s.id,
      AnonymousId: s.anonymousId,
      UserId: s.userId,
      CreatedAt: s.createdAt.toISOString(),
      LastActivityAt: s.lastActivityAt.toISOString(),
      DurationSeconds: s.durationSeconds,
    },
  };
}

export function propertyObjectViewEndedEvent(
  v: ClosedView,
  owner: SessionOwner,
  correlationId: string | null,
): NewEvent<PropertyObjectViewEndedPayload> {
  return {
    topic: TOPICS.propertyObjectViewEnded,
    eventType: PROPERTY_OBJECT_VIEW_ENDED_EVENT,
    contractVersion: CONTRACT_VERSION,
    aggregateType: 'PropertyObjectView',
    aggregateId: v.id,
    occurredAt: v.endedAt,
    correlationId,
    payload: {
      PropertyObjectViewId: v.id,
      PropertyObjectId: v.propertyObjectId,
      SessionId: v.sessionId,
      AnonymousId: owner.anonymousId,
      UserId: owner.userId,
      ViewSource: v.viewSource,
      ViewedAt: v.createdAt.toISOString(),
      LastActivityAt: v.lastActivityAt.toISOString(),
      DurationSeconds: v.durationSeconds,
      FilterSnapshot: v.filterSnapshot ?? null,
    },
  };
}

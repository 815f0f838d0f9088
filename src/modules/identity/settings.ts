import { Type } from '@sinclair/typebox';

/**
 * Settings of the identity context (seed 003 "AccessFanOutJob" config), spread into the service's
 * one settings schema by src/config.ts. Imports nothing from config.ts, so there is no cycle.
 */
export const identitySettings = {
  IDENTITY_INLINE_FANOUT_THRESHOLD: Type.Integer({
    default: 500,
    minimum: 0,
    maximum: 100_000,
    description: 'A role with at most this many unique active users gets its UserAccessChanged events inline; above it a fan-out task is queued',
  }),
  IDENTITY_ACCESS_FANOUT_POLLING_INTERVAL_MS: Type.Integer({
    default: 5000,
    minimum: 100,
    description: 'AccessFanOutJob queue polling interval (a new task also wakes it through NOTIFY)',
  }),
  IDENTITY_ACCESS_FANOUT_BATCH_SIZE: Type.Integer({
    default: 500,
    minimum: 1,
    maximum: 10_000,
    description: 'Users per fan-out page: their events and the task checkpoint commit together',
  }),
  IDENTITY_ACCESS_FANOUT_MAX_LEASE_DURATION_MS: Type.Integer({
    default: 300_000,
    minimum: 1000,
    description: 'Lease of a taken fan-out task, renewed by every checkpoint; once past, another worker resumes it from its Cursor',
  }),
  IDENTITY_ACCESS_FANOUT_MAX_ATTEMPTS: Type.Integer({
    default: 5,
    minimum: 1,
    maximum: 100,
    description: 'Leases a fan-out task may take; when AttemptCount reaches it, a failing task becomes Failed (poison, replay by runbook)',
  }),
  IDENTITY_ASSIGNMENT_EXPIRY_INTERVAL_MS: Type.Integer({
    default: 30_000,
    minimum: 100,
    description: 'How often the expiry worker marks role assignments past ExpiresAt as Expired and announces them',
  }),
  IDENTITY_ASSIGNMENT_EXPIRY_BATCH_SIZE: Type.Integer({
    default: 500,
    minimum: 1,
    maximum: 10_000,
    description: 'Users whose due assignments one expiry transaction handles',
  }),
  IDENTITY_PHONE_DEFAULT_REGION: Type.String({
    default: 'RU',
    pattern: '^[A-Z]{2}$',
    description: 'Country (ISO 3166 alpha-2) assumed for phone numbers given without a +country code',
  }),
};

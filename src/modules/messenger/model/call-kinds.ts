/** Value sets of media sessions (1:1 calls and conferences), their rosters and recordings. */

export const SESSION_KINDS = ['Direct', 'Conference'] as const;
export type SessionKind = (typeof SESSION_KINDS)[number];
export const MEDIA_KINDS_AV = ['Audio', 'Video'] as const;
export type MediaKind = (typeof MEDIA_KINDS_AV)[number];
export const SESSION_STATUSES = ['Ringing', 'Active', 'Declined', 'Cancelled', 'Missed', 'Ended'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const ROSTER_STATUSES = ['Invited', 'Joined', 'Left'] as const;
export type RosterStatus = (typeof ROSTER_STATUSES)[number];
export const RECORDING_STATUSES = ['Recording', 'Stopped', 'Available', 'Failed'] as const;
export type RecordingStatus = (typeof RECORDING_STATUSES)[number];

/**
 * A session one can still enter: a call ringing or in progress, a conference running. Declined,
 * Cancelled, Missed and Ended are over for good; no join token is minted for them.
 */
export const isSessionOpen = (status: string): boolean => status === 'Ringing' || status === 'Active';

import { Type } from '@sinclair/typebox';

/**
 * The one phone setting both identity (normalizing a user's number) and the messenger (a number typed
 * into contact search) read: two contexts guessing different countries for the same typed number
 * would store one user under a number the other never finds.
 */
export const phoneRegionSettings = {
  PHONE_DEFAULT_REGION: Type.String({
    default: 'RU',
    pattern: '^[A-Z]{2}$',
    description: 'Country (ISO 3166 alpha-2) assumed for a phone number given without a +country code (identity and messenger alike)',
  }),
};

import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

/**
 * A phone number as given by a person ("8 (999) 123-45-67", "+7 999 1234567") in E.164
 * ("+79991234567"), or null when it is not a valid number. Full metadata ("max"), so a number of the
 * right length but an unassigned range is refused too: the messenger trusts us to send E.164.
 */
export function toE164(input: string, defaultRegion: string): string | null {
  if (input.length > 40) return null;
  const parsed = parsePhoneNumberFromString(input, defaultRegion as CountryCode);
  if (!parsed || !parsed.isValid()) return null;
  return parsed.number;
}

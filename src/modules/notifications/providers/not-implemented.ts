import { NTF } from '../model.ts';
import type { NotificationProvider } from './port.ts';

/**
 * A channel adapter that is declared but not built yet (telegram, max, whatsapp, viber), or one whose
 * settings are missing. It answers NTF_PROVIDER_NOT_IMPLEMENTED; the workers never claim its rows,
 * which wait until the adapter exists and the channel is enabled.
 */
export function declaredProvider(key: string, opts: { implemented: boolean } = { implemented: false }): NotificationProvider {
  return {
    key,
    implemented: opts.implemented,
    configured: false,
    send: async () => ({ ok: false, code: NTF.notImplemented }),
  };
}

import { NOTIFICATIONS_DEFAULTS } from '../defaults.ts';
import { fromDomain, type NotificationsSettings } from '../settings.ts';
import type { Hub } from '../../../platform/realtime/index.ts';
import type { Clock } from '../../../platform/time.ts';
import { createHttpEmailProvider } from './http-email.ts';
import { createHttpPushProvider } from './http-push.ts';
import { createHttpSmsProvider } from './http-sms.ts';
import { createInAppProvider } from './in-app.ts';
import { declaredProvider } from './not-implemented.ts';
import type { NotificationProvider, ProviderState } from './port.ts';
import { createSmtpProvider } from './smtp.ts';

export interface ProviderRegistry {
  get(key: string): NotificationProvider | undefined;
  /** Keys whose adapter is built and configured: the only ones the workers claim rows for. */
  availableKeys(): string[];
  state(key: string): ProviderState;
  close(): Promise<void>;
}

export function registryOf(providers: NotificationProvider[]): ProviderRegistry {
  const byKey = new Map(providers.map((p) => [p.key, p]));
  return {
    get: (key) => byKey.get(key),
    availableKeys: () => providers.filter((p) => p.implemented && p.configured).map((p) => p.key),
    state(key) {
      const p = byKey.get(key);
      if (!p) return 'unknown';
      if (!p.implemented) return 'not_implemented';
      return p.configured ? 'available' : 'not_configured';
    },
    async close() {
      await Promise.all(providers.map((p) => p.close?.()));
    },
  };
}

/** Every adapter the settings describe; those without settings answer NTF_PROVIDER_NOT_IMPLEMENTED. */
export function createProviders(
  config: NotificationsSettings,
  deps: { hub: Hub; clock: Clock; timeoutMs?: number },
): ProviderRegistry {
  // Longest wait for one provider call (NOTIFICATIONS_DEFAULTS.providerTimeoutMs).
  const timeoutMs = deps.timeoutMs ?? NOTIFICATIONS_DEFAULTS.providerTimeoutMs;
  const now = () => deps.clock.now();
  return registryOf([
    createInAppProvider(deps.hub),
    config.NOTIFICATIONS_SMTP_HOST
      ? createSmtpProvider({
          host: config.NOTIFICATIONS_SMTP_HOST,
          port: config.NOTIFICATIONS_SMTP_PORT,
          secure: config.NOTIFICATIONS_SMTP_TLS === 'implicit',
          allowPlain: config.NOTIFICATIONS_SMTP_TLS === 'none',
          user: config.NOTIFICATIONS_SMTP_USER,
          password: config.NOTIFICATIONS_SMTP_PASSWORD,
          from: config.NOTIFICATIONS_SMTP_FROM,
          messageIdDomain: fromDomain(config.NOTIFICATIONS_SMTP_FROM),
          timeoutMs,
        })
      : declaredProvider('smtp', { implemented: true }),
    config.NOTIFICATIONS_EMAIL_HTTP_URL
      ? createHttpEmailProvider({
          baseUrl: config.NOTIFICATIONS_EMAIL_HTTP_URL,
          secret: config.NOTIFICATIONS_EMAIL_HTTP_SECRET,
          from: config.NOTIFICATIONS_SMTP_FROM,
          timeoutMs,
          now,
        })
      : declaredProvider('http-email', { implemented: true }),
    config.NOTIFICATIONS_SMS_HTTP_URL
      ? createHttpSmsProvider({ baseUrl: config.NOTIFICATIONS_SMS_HTTP_URL, secret: config.NOTIFICATIONS_SMS_HTTP_SECRET, timeoutMs, now })
      : declaredProvider('http-sms', { implemented: true }),
    config.NOTIFICATIONS_PUSH_HTTP_URL
      ? createHttpPushProvider({ baseUrl: config.NOTIFICATIONS_PUSH_HTTP_URL, secret: config.NOTIFICATIONS_PUSH_HTTP_SECRET, timeoutMs, now })
      : declaredProvider('http-push', { implemented: true }),
    declaredProvider('telegram'),
    declaredProvider('max'),
    declaredProvider('whatsapp'),
    declaredProvider('viber'),
  ]);
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { AppError, errorCodes, parseJsonBody } from '../../../platform/http/index.ts';
import { WebhookBody, WebhookParams, WebhookReply } from '../api-schemas.ts';
import type { NotificationsContext } from '../context.ts';
import { API_ERRORS } from '../model.ts';
import { namesItsCycle, parseReference } from './receipt-rules.ts';
import { applyReceipt } from './receipts.ts';
import { replayMarkOf, type ReplayMark } from './replay-sql.ts';
import { checkWebhookSignature, SIGNATURE_HEADER, TIMESTAMP_HEADER } from './signature.ts';
import { NOTIFICATIONS_DEFAULTS } from '../defaults.ts';

const header = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * `POST /api/notifications/providers/{providerKey}/webhook`: delivery receipts. The HMAC is checked
 * over the raw bytes before the body is even validated, so an unsigned or wrongly signed request
 * gets 401 and changes nothing. A signature is applied once (409 `NTF_WEBHOOK_REPLAYED` after that,
 * on every replica), and a receipt must name the DeliveryCycle it answers (400 otherwise).
 */
export async function registerWebhookRoutes(app: FastifyInstance, ctx: NotificationsContext): Promise<void> {
  const secrets: Record<string, string | undefined> = {
    smtp: ctx.config.NOTIFICATIONS_SMTP_WEBHOOK_SECRET,
    'http-email': ctx.config.NOTIFICATIONS_EMAIL_HTTP_WEBHOOK_SECRET,
    'http-sms': ctx.config.NOTIFICATIONS_SMS_HTTP_WEBHOOK_SECRET,
    'http-push': ctx.config.NOTIFICATIONS_PUSH_HTTP_WEBHOOK_SECRET,
  };
  const rawBodies = new WeakMap<FastifyRequest, string>();
  const marks = new WeakMap<FastifyRequest, ReplayMark>();

  // The JSON parser's refusal of a body (unreadable, empty, a __proto__ key), answered once the signature holds.
  const refused = new WeakMap<FastifyRequest, Error>();

  // Own encapsulated scope: the raw-body JSON parser applies to the webhook only.
  await app.register(async (scope) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
      rawBodies.set(req, body as string);
      // A body the parser refuses still reaches the signature check (401 when unsigned), and only
      // then gets the parser's own refusal, the same code as on every other route (parseJsonBody).
      let parsed: unknown;
      try {
        parsed = parseJsonBody(body as string);
      } catch (err) {
        refused.set(req, err as Error);
        parsed = undefined;
      }
      done(null, parsed);
    });
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();
    r.post(
      '/api/notifications/providers/:providerKey/webhook',
      {
        preValidation: async (req) => {
          const providerKey = (req.params as { providerKey: string }).providerKey;
          // Own keys only: `__proto__`, `constructor` or `toString` must not find Object.prototype's.
          if (!Object.hasOwn(secrets, providerKey)) throw new AppError(API_ERRORS.unknownProvider, `no webhook for provider '${providerKey}'`, 404);
          const secret = secrets[providerKey];
          const check = secret
            ? checkWebhookSignature({
                secret,
                rawBody: rawBodies.get(req) ?? '',
                signature: header(req, SIGNATURE_HEADER),
                timestamp: header(req, TIMESTAMP_HEADER),
                now: ctx.clock.now(),
                maxSkewSeconds: NOTIFICATIONS_DEFAULTS.webhookMaxSkewSeconds,
              })
            : 'missing';
          if (check !== 'ok') {
            ctx.metrics.webhooks.inc({ provider: providerKey, result: 'unauthorized' });
            throw new AppError(API_ERRORS.badSignature, secret ? `webhook signature ${check}` : 'webhook secret not configured', 401);
          }
          const refusal = refused.get(req);
          if (refusal) throw refusal;
          // Both headers are present and well-formed once the check passed.
          marks.set(req, replayMarkOf(header(req, SIGNATURE_HEADER)!, Number(header(req, TIMESTAMP_HEADER)), NOTIFICATIONS_DEFAULTS.webhookMaxSkewSeconds));
        },
        schema: {
          operationId: 'receiveProviderWebhook',
          tags: ['notifications'],
          security: [{ providerSignature: [] }],
          summary: 'Delivery receipt from a provider (HMAC-signed): delivered confirms, failed reopens Sent → Failed in a new DeliveryCycle',
          params: WebhookParams,
          body: WebhookBody,
          // The kernel adds the input and availability codes (openapi-components.ts).
          response: {
            200: WebhookReply,
            400: errorCodes(API_ERRORS.invalidReference, API_ERRORS.cycleRequired),
            401: errorCodes(API_ERRORS.badSignature),
            404: errorCodes(API_ERRORS.unknownProvider),
            409: errorCodes(API_ERRORS.replayed),
          },
        },
      },
      async (req) => {
        const ref = parseReference(req.body.clientReference);
        if (!ref) throw new AppError(API_ERRORS.invalidReference, 'clientReference is not a NotificationId', 400);
        const deliveryCycle = req.body.deliveryCycle ?? ref.deliveryCycle;
        if (!namesItsCycle({ deliveryCycle, providerMessageId: req.body.providerMessageId })) {
          ctx.metrics.webhooks.inc({ provider: req.params.providerKey, result: 'cycle_missing' });
          throw new AppError(API_ERRORS.cycleRequired, 'a receipt must name its deliveryCycle (or `NotificationId:DeliveryCycle` as clientReference) or carry the providerMessageId of the cycle it answers', 400);
        }
        const mark = marks.get(req);
        if (!mark) throw new Error('webhook receipt reached the handler without a checked signature');
        const result = await applyReceipt(
          { db: ctx.db, metrics: ctx.metrics, log: ctx.log, maxReopens: ctx.tuning.maxReopens, userFrames: ctx.userFrames },
          req.params.providerKey,
          {
            notificationId: ref.notificationId,
            outcome: req.body.status,
            ...(deliveryCycle === undefined ? {} : { deliveryCycle }),
            ...(req.body.providerMessageId ? { providerMessageId: req.body.providerMessageId } : {}),
          },
          mark,
          ctx.clock.now(),
        );
        if (result === 'replayed') throw new AppError(API_ERRORS.replayed, 'this signed receipt was already applied; nothing changed', 409);
        return { result };
      },
    );
  });
}

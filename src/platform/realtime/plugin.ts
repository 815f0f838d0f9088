import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import fastifyWebsocket from '@fastify/websocket';
import { Type } from '@sinclair/typebox';
import { Text } from '../types/index.ts';
import { AUTH_CODES, extractToken, type Principal } from '../http/auth.ts';
import { errorCodes } from '../http/openapi-components.ts';
import type { Hub } from './hub.ts';
import type { ConnectRefusal } from './hub-api.ts';
import { requestedNegotiateVersion } from './protocol.ts';
import { REALTIME_DEFAULTS } from './defaults.ts';

export interface HubPluginOptions {
  hub: Hub;
  /** Default '/hubs/messenger'; negotiate is `<path>/negotiate`. */
  path?: string;
  /** Largest WebSocket message accepted from a client (they send handshakes and pings). Default 64 KiB. */
  maxClientMessageBytes?: number;
  /**
   * The access checks the hub asks (HubDeps.accessChecks), for the 403 codes the API document lists
   * on negotiate; read once the app is ready, when every module has registered its own.
   */
  accessChecks?: readonly { code?: string }[];
}


/** What each HubPluginOptions field left out means. */
const defaults = {
  path: '/hubs/messenger',
  maxClientMessageBytes: REALTIME_DEFAULTS.hubMaxClientMessageBytes,
} as const;

// A JWT from an identity provider stays well below 16 KiB (headers cap it near there anyway).
const AccessToken = Text({ maxLength: 16_384 });
// Closed like every API route's query (strict-inputs.ts): a parameter it does not name is 400
// VALIDATION_FAILED naming it. SignalR clients send only these two (and the hub URL's own query).
const NegotiateQuery = Type.Object(
  {
    negotiateVersion: Type.Optional(Text({ maxLength: 10 })),
    access_token: Type.Optional(AccessToken),
  },
  { additionalProperties: false },
);
const ConnectQuery = Type.Object({ id: Type.Optional(Text({ maxLength: 1024 })), access_token: Type.Optional(AccessToken) });
const NegotiateReplySchema = Type.Object({
  negotiateVersion: Type.Integer(),
  connectionId: Type.String(),
  connectionToken: Type.Optional(Type.String()),
  availableTransports: Type.Array(
    Type.Object({
      transport: Type.Literal('WebSockets'),
      transferFormats: Type.Array(Type.Union([Type.Literal('Text'), Type.Literal('Binary')])),
    }),
  ),
});

const shuttingDown = { code: 'HUB_SHUTTING_DOWN', message: 'this replica is shutting down; connect again' };

/** The answer to a connect past a budget: the user's own share (429), or the replica's rate every user shares (503). */
const connectRefusal = (r: ConnectRefusal): { code: string; message: string } =>
  r.statusCode === 429
    ? { code: 'RATE_LIMITED', message: `too many new hub connections of this user; try again in ${r.retryAfterSeconds} s` }
    : { code: 'HUB_BUSY', message: `too many new connections on this server; try again in ${r.retryAfterSeconds} s` };

/**
 * The SignalR endpoint: `POST <path>/negotiate` and the WebSocket at `<path>`. Registers
 * @fastify/websocket itself unless the app already did, so that on shutdown the hub's close
 * messages go out before the sockets are closed (the plugin's default preClose closes them bare).
 */
async function hubRoutes(app: FastifyInstance, opts: HubPluginOptions): Promise<void> {
  const { hub } = opts;
  const path = opts.path ?? defaults.path;

  if (!app.hasDecorator('websocketServer')) {
    await app.register(fastifyWebsocket, {
      options: { maxPayload: opts.maxClientMessageBytes ?? defaults.maxClientMessageBytes },
      preClose: async () => {
        await hub.close();
        app.websocketServer.close();
      },
      // Socket errors after the upgrade are peers vanishing mid-write: routine, not server faults.
      errorHandler: (err, socket, req) => {
        req.log.debug({ err: { message: err.message } }, 'hub socket error');
        socket.terminate();
      },
    });
  } else {
    app.addHook('preClose', () => hub.close());
  }

  // 403: the access checks' codes, added once the app is ready; 503 SERVICE_UNAVAILABLE is the kernel's.
  const negotiateResponse: Record<number, unknown> = {
    200: NegotiateReplySchema,
    400: errorCodes('HUB_NEGOTIATE_VERSION_INVALID', 'VALIDATION_FAILED'),
    401: errorCodes('AUTH_REQUIRED', ...AUTH_CODES.filter((c) => c !== 'AUTH_KEYS_UNAVAILABLE')),
    // Its body is read and dropped (clients send none, or an empty one), up to REALTIME_DEFAULTS.hubNegotiateBodyLimit bytes.
    413: errorCodes('FST_ERR_CTP_BODY_TOO_LARGE'),
    // The user's own share of the connects (REALTIME_DEFAULTS.hubUserConnectsPerSecond), with Retry-After.
    429: errorCodes('RATE_LIMITED'),
    503: errorCodes('HUB_SHUTTING_DOWN', 'HUB_BUSY', 'AUTH_KEYS_UNAVAILABLE'),
  };
  app.addHook('onReady', async () => {
    const refusals = [...new Set((opts.accessChecks ?? []).map((c) => c.code ?? 'HUB_ACCESS_REVOKED'))];
    if (refusals.length > 0) negotiateResponse[403] = errorCodes(...(refusals as [string, ...string[]]));
  });

  // Clients POST an empty negotiate body with whatever content type their HTTP stack picks.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: REALTIME_DEFAULTS.hubNegotiateBodyLimit }, (_req, _body, done) => done(null, undefined));
    scope.post(
      `${path}/negotiate`,
      {
        schema: {
          operationId: 'negotiateHub',
          tags: ['realtime'],
          // The token comes as a bearer header, or as ?access_token= from a browser (WebSockets cannot set headers).
          security: [{ bearer: [] }],
          summary: 'SignalR negotiate: a connection token for the WebSocket (WebSockets transport only)',
          querystring: NegotiateQuery,
          response: negotiateResponse,
        },
      },
      async (req, reply) => {
        if (hub.closing) return reply.code(503).send(shuttingDown);
        const query = req.query as { negotiateVersion?: string };
        const auth = await hub.authenticate(extractToken(req.headers, req.query));
        if (!auth.ok) return reply.code(auth.statusCode).send({ code: auth.code, message: auth.message });
        // ASP.NET Core answers an unreadable version with 200 {"error"}; bad input here is a 4xx
        // { code, message } like on every route (with the same text; clients fail to start either way).
        const requested = requestedNegotiateVersion(query.negotiateVersion);
        if (!requested.ok) return reply.code(400).send({ code: 'HUB_NEGOTIATE_VERSION_INVALID', message: requested.error });
        const refused = hub.admitConnect(auth.principal.userId);
        if (refused) return reply.code(refused.statusCode).header('retry-after', String(refused.retryAfterSeconds)).send(connectRefusal(refused));
        return hub.negotiate(auth.principal, requested.version);
      },
    );
  });

  const admitted = new WeakMap<FastifyRequest, { principal: Principal; connectionId: string; retryAfterSeconds?: number }>();

  // Refusals happen before the upgrade, as plain HTTP answers: the client's WebSocket fails to open
  // and its start() rejects.
  const admit = async (req: FastifyRequest, reply: FastifyReply) => {
    if (hub.closing) return reply.code(503).send(shuttingDown);
    const auth = await hub.authenticate(extractToken(req.headers, req.query));
    if (!auth.ok) return reply.code(auth.statusCode).send({ code: auth.code, message: auth.message });
    const connectionId = hub.connectionIdFor(auth.principal, (req.query as { id?: string }).id);
    if (connectionId === undefined) {
      return reply
        .code(404)
        .send({ code: 'HUB_CONNECTION_NOT_FOUND', message: 'unknown or expired connection id; negotiate again' });
    }
    // A negotiated socket took its place in the connect budgets at negotiate; one that skipped it takes it now.
    const query = req.query as { id?: string };
    const refused = query.id === undefined ? hub.admitConnect(auth.principal.userId) : undefined;
    // Past the user's own share the upgrade is refused as negotiate is; past the replica's rate the
    // socket is answered and closed with a close message that allows reconnecting (hub.turnAway).
    if (refused?.statusCode === 429) return reply.code(429).header('retry-after', String(refused.retryAfterSeconds)).send(connectRefusal(refused));
    const retryAfterSeconds = refused?.retryAfterSeconds;
    admitted.set(req, { principal: auth.principal, connectionId, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) });
  };

  app.get(
    path,
    { websocket: true, schema: { querystring: ConnectQuery }, preValidation: admit },
    (socket, req) => {
      const admission = admitted.get(req);
      if (!admission) return socket.terminate(); // cannot happen: preValidation refused it
      if (admission.retryAfterSeconds !== undefined) return hub.turnAway(socket, admission.principal, admission.retryAfterSeconds);
      hub.attach(socket, admission.principal, admission.connectionId);
    },
  );
}

export const hubPlugin = fp(hubRoutes, { name: 'pin-realtime-hub', fastify: '5.x' });

/**
 * Module boundaries (run by `npm test`):
 * - a module imports another module only through that module's index.ts, and the kernel only
 *   through src/platform/<part>/index.ts;
 * - the platform (shared kernel) never imports a module, nor the app's config.ts / app.ts / main.ts:
 *   it receives its settings as plain values; nor do the shared event contracts (src/contracts);
 * - the push part (src/platform/push) knows no module and modules use it only through its index.ts;
 *   the messenger and notifications never import each other's frames; the app wires no module
 *   function (it builds modules only through src/modules/index.ts);
 * - the messenger stands on floors (its README's drawing): each part imports only the floors below
 *   it, and its bottom floor, model/, imports nothing of the messenger but itself;
 * - no import cycles.
 */

/**
 * The messenger's floors, bottom first: a file of a floor imports the messenger only from its own
 * floor or a lower one. model/ (the kinds, the push-row writer, the blacklist reads) is the bottom
 * floor with the files every part shares; a lower part that needs something of a higher one takes
 * it as a callback wired in index.ts (the deactivation's cascade into calls). context.ts holds what
 * the parts share and imports no floor above it either: what only one part takes is that part's
 * extension of it (calls/media-join.ts CallsContext, messages/context.ts MessagesContext), gathered
 * in routes.ts. No file of the messenger imports a higher floor, not even for a type.
 */
const M = '^src/modules/messenger/';
const MESSENGER_FLOORS = [
  ['model/', '(schema|errors|sql-rows|admin-body|settings|options)\\.ts$'],
  ['user-replica/'],
  ['contact-search/', 'context\\.ts$'],
  ['chats/', 'contacts/'],
  ['calls/', 'messages/'],
  ['files/'],
  ['realtime-dispatch/'],
  ['presence/'],
  ['routes\\.ts$', 'index\\.ts$'],
];
const floorPath = (floor) => floor.map((p) => M + p);
const messengerFloorRules = MESSENGER_FLOORS.slice(0, -1).map((floor, i) => ({
  name: `messenger-floor-${i + 1}`,
  comment: `The messenger's floor ${i + 1} (${floor.join(', ')}) imports no part above it; what a lower part needs from a higher one comes as a callback wired in index.ts.`,
  severity: 'error',
  from: { path: floorPath(floor) },
  to: { path: MESSENGER_FLOORS.slice(i + 1).flatMap(floorPath) },
}));

module.exports = {
  forbidden: [
    ...messengerFloorRules,
    {
      name: 'messenger-model-is-the-ground',
      comment: "The messenger's bottom floor (model/) imports nothing of the messenger but model/ itself.",
      severity: 'error',
      from: { path: `${M}model/` },
      to: { path: M, pathNot: `${M}model/` },
    },
    {
      name: 'messenger-parts-on-one-floor-apart',
      comment: 'Parts on one floor of the messenger (chats and contacts, calls and messages) do not import each other: what both need stands on a floor below.',
      severity: 'error',
      from: { path: `${M}(chats|contacts)/` },
      to: { path: `${M}(chats|contacts)/`, pathNot: `${M}$1/` },
    },
    {
      name: 'messenger-calls-and-messages-apart',
      comment: 'Calls and messages share a floor of the messenger: neither imports the other.',
      severity: 'error',
      from: { path: `${M}(calls|messages)/` },
      to: { path: `${M}(calls|messages)/`, pathNot: `${M}$1/` },
    },
    {
      name: 'module-internals',
      comment: 'A module may use another module only through its index.ts (its public surface).',
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/([^/]+)/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'contracts-know-no-module',
      comment: 'Integration-event contracts are shared by producer and consumers, so they import no module.',
      severity: 'error',
      from: { path: '^src/contracts/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'platform-knows-no-module',
      comment: 'The shared kernel knows no domain.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^src/modules/' },
    },
    {
      name: 'kernel-through-its-index',
      comment: 'A module uses the kernel only through src/platform/<part>/index.ts (or the one-file parts module.ts and time.ts).',
      severity: 'error',
      from: { path: '^src/(modules|contracts)/' },
      to: { path: '^src/platform/', pathNot: ['^src/platform/[^/]+/index\\.ts$', '^src/platform/(module|time)\\.ts$'] },
    },
    {
      name: 'platform-knows-no-app',
      comment: "The shared kernel receives its settings as plain values; it never imports the app's Config.",
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^src/(config|app|main)\\.ts$' },
    },
    {
      name: 'push-knows-no-module',
      comment:
        'The push part (src/platform/push: realtime outbox, dispatcher, event stream) is a kernel part: the kinds it pushes are registered with it (push.registerKinds), never imported.',
      severity: 'error',
      from: { path: '^src/platform/push/' },
      to: { path: '^src/(modules|contracts)/' },
    },
    {
      name: 'push-through-its-index',
      comment: 'Modules use the push part only through src/platform/push/index.ts (its write port, registration and types).',
      severity: 'error',
      from: { path: '^src/modules/' },
      to: { path: '^src/platform/push/', pathNot: '^src/platform/push/index\\.ts$' },
    },
    {
      name: 'no-foreign-frames',
      comment:
        "The messenger and notifications own their frames and register them with the push part; neither imports the other's, not even through its index.ts.",
      severity: 'error',
      from: { path: '^src/modules/(messenger|notifications)/' },
      to: { path: '^src/modules/(messenger|notifications)/', pathNot: '^src/modules/$1/' },
    },
    {
      name: 'app-wires-no-module-function',
      comment: 'The app and its wiring build modules only through src/modules/index.ts (each module\'s defineModule); the kernel parts get no module function.',
      severity: 'error',
      from: { path: '^src/(app\\.ts|wiring/)' },
      to: { path: '^src/modules/', pathNot: '^src/modules/index\\.ts$' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};

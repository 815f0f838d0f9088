/**
 * Module boundaries (run by `npm test`):
 * - a module imports another module only through that module's index.ts, and the kernel only
 *   through src/platform/<part>/index.ts;
 * - the platform (shared kernel) never imports a module, nor the app's config.ts / app.ts / main.ts:
 *   it receives its settings as plain values; nor do the shared event contracts (src/contracts);
 * - the push part (src/platform/push) knows no module and modules use it only through its index.ts;
 *   the messenger and notifications never import each other's frames; the app wires no module
 *   function (it builds modules only through src/modules/index.ts);
 * - no import cycles.
 */
module.exports = {
  forbidden: [
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

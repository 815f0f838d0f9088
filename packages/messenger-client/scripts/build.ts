/**
 * The browser bundle: one ES module (the SDK and @microsoft/signalr) at dist/messenger-client.js, for
 * web apps and the real-browser test. Built for the browser platform, so a `node:` import anywhere on
 * the SDK's path fails the build instead of failing in a page. Run by `npm run build -w
 * packages/messenger-client` and by `npm test`'s set-up.
 */
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
export const BUNDLE = `${root}dist/messenger-client.js`;

await build({
  entryPoints: [`${root}src/index.ts`],
  outfile: BUNDLE,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  sourcemap: true,
  logLevel: 'warning',
});

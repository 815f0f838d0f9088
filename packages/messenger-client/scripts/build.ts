/**
 * Builds what the package ships (dist/ is gitignored; `npm test`'s set-up and `npm pack` run this):
 *   dist/esm/index.js      ES module for Node 20+ and bundlers (@microsoft/signalr stays a dependency)
 *   dist/cjs/index.js      CommonJS for require() (dist/cjs/package.json says so)
 *   dist/browser/messenger-client.js  one minified ES module with the SignalR client inside, for a page
 *                          without a bundler; built for the browser platform, so a `node:` import on
 *                          the SDK's path fails the build instead of failing in a page
 *   dist/{esm,cjs}/*.d.ts  the types, next to each format so TypeScript reads each in its module kind
 * Run by `npm run build -w packages/messenger-client`.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { build, type BuildOptions } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const dist = `${root}dist`;
export const BUNDLE = `${dist}/browser/messenger-client.js`;

rmSync(dist, { recursive: true, force: true });
const common: BuildOptions = { entryPoints: [`${root}src/index.ts`], bundle: true, target: 'es2022', sourcemap: true, logLevel: 'warning' };
// For Node and bundlers the SignalR client stays external: under Node it is loaded as CommonJS, which
// may require its `ws` (only used where the runtime has no WebSocket of its own, Node 20).
const external = ['@microsoft/signalr'];
await Promise.all([
  build({ ...common, outfile: `${dist}/esm/index.js`, format: 'esm', platform: 'neutral', external }),
  build({ ...common, outfile: `${dist}/cjs/index.js`, format: 'cjs', platform: 'node', external }),
  // Minified: what a page loads over the network (the source map keeps stack traces readable).
  build({ ...common, outfile: BUNDLE, format: 'esm', platform: 'browser', minify: true }),
]);
writeFileSync(`${dist}/cjs/package.json`, `${JSON.stringify({ type: 'commonjs' })}\n`);

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const types = spawnSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
if (types.status !== 0) throw new Error('messenger-client: tsc failed to write the declarations');
// The sources import each other as `./x.ts`; published declarations must name `./x.js`.
for (const file of readdirSync(`${dist}/esm`).filter((f) => f.endsWith('.d.ts'))) {
  const path = `${dist}/esm/${file}`;
  writeFileSync(path, readFileSync(path, 'utf8').replace(/((?:from|import\()\s*'\.\.?\/[^']+)\.ts'/g, "$1.js'"));
}
mkdirSync(`${dist}/cjs`, { recursive: true });
for (const file of readdirSync(`${dist}/esm`).filter((f) => f.endsWith('.d.ts'))) cpSync(`${dist}/esm/${file}`, `${dist}/cjs/${file}`);

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildTestApp } from '../../support/app.ts';

/**
 * /docs: Swagger UI over the OpenAPI document, loaded in a real headless Chromium (Debian's
 * chromium, which `npm test` installs when missing): every path of the document is rendered.
 */

const run = promisify(execFile);

/** The DOM after the page's scripts ran (virtual time lets the UI fetch and render the document). */
async function renderedDom(url: string): Promise<string> {
  // A profile of its own: other Chromium processes on the machine must not share its lock.
  const profile = await mkdtemp(join(tmpdir(), 'pin-docs-chromium-'));
  try {
    const { stdout } = await run(
      'chromium',
      ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', `--user-data-dir=${profile}`,
        '--virtual-time-budget=8000', '--dump-dom', url],
      { timeout: 90_000, maxBuffer: 64 * 1024 * 1024 },
    );
    return stdout;
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}

/** Swagger UI writes OpenAPI's `{id}` path parameters as they are, inside the operation's path element. */
const htmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

test('/docs renders every operation of the OpenAPI document in headless Chromium', async () => {
  const { app } = await buildTestApp();
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const doc = (await (await fetch(`${base}/docs/json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const paths = Object.keys(doc.paths);
  assert.ok(paths.includes('/api/notifications/terminal-failures/{id}/reprocess'));
  assert.ok(paths.length > 30, `the document has every route (${paths.length})`);

  const page = await fetch(`${base}/docs`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'.*frame-ancestors 'none'|frame-ancestors 'none'.*script-src 'self'/);

  const dom = await renderedDom(`${base}/docs`);
  assert.match(dom, /class="swagger-ui/, 'Swagger UI mounted');
  const missing = paths.filter((p) => !dom.includes(`data-path="${htmlText(p)}"`));
  assert.deepEqual(missing, [], 'every path is rendered as an operation');
  const operations = Object.values(doc.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
  const rendered = dom.match(/class="opblock opblock-/g)?.length ?? 0;
  assert.equal(rendered, operations, 'one operation block per method and path');
});

test('API_DOCS_ENABLED=false: /docs, its assets and the document answer 404 {code,message}', async () => {
  const { app } = await buildTestApp({ API_DOCS_ENABLED: 'false' });
  for (const url of ['/docs', '/docs/json', '/docs/yaml', '/docs/static/swagger-ui-bundle.js']) {
    const res = await app.inject(url);
    assert.equal(res.statusCode, 404, url);
    assert.equal(res.json().code, 'ROUTE_NOT_FOUND');
  }
});

test('hostile /docs paths are 4xx, never a file outside the bundle nor a 5xx', async () => {
  const { app } = await buildTestApp();
  for (const url of ['/docs/static/../../../package.json', '/docs/static/%2e%2e/%2e%2e/package.json', '/docs/static/%00', '/docs/static/nope.js', '/docs/..%2f..%2fpackage.json']) {
    const res = await app.inject(url);
    assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${url}: ${res.statusCode}`);
    assert.doesNotMatch(res.body, /"name":\s*"pin-platform-jobs"/, url);
  }
});

import { readFile } from 'node:fs/promises';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError } from '../http/index.ts';
import { runbookHtml } from './runbook-html.ts';

/**
 * /ops: the console's one page, its script and style, checked in (src/platform/ops/console/, no
 * build step, no CDN) and served by this process; and /ops/runbooks/<alert>, the runbook of an
 * alert as a sanitised HTML page (runbook-html.ts), which the console also shows in place. The page holds no data: its script calls /api/ops with the bearer token the user
 * pastes (kept in sessionStorage, sent in the Authorization header, never a cookie, so no request
 * another site makes carries it: no CSRF). A strict Content-Security-Policy: scripts and styles
 * from this origin only, no inline script, calls to this origin only, not framable.
 */

const CONSOLE_DIR = new URL('./console/', import.meta.url);
const RUNBOOKS_DIR = new URL('../../../docs/runbooks/', import.meta.url);

export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const ASSETS: Record<string, { file: string; type: string }> = {
  '/ops': { file: 'index.html', type: 'text/html; charset=utf-8' },
  ...Object.fromEntries(['core.js', 'overview.js', 'failures.js', 'bulk.js', 'app.js'].map((file) => [`/ops/${file}`, { file, type: 'text/javascript; charset=utf-8' }])),
  '/ops/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
  '/ops/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
};

function secure(reply: FastifyReply, type: string): FastifyReply {
  return reply
    .header('content-type', type)
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store');
}

export function registerConsolePages(app: FastifyInstance): void {
  for (const [path, asset] of Object.entries(ASSETS)) {
    app.get(path, { schema: { hide: true }, logLevel: 'warn' }, async (_req, reply) => secure(reply, asset.type).send(await readFile(new URL(asset.file, CONSOLE_DIR), 'utf8')));
  }
  app.get<{ Params: { alert: string } }>('/ops/runbooks/:alert', { schema: { hide: true }, logLevel: 'warn' }, async (req, reply) => {
    const { alert } = req.params;
    const text = /^[A-Za-z][A-Za-z0-9]{0,80}$/.test(alert) ? await readFile(new URL(`${alert}.md`, RUNBOOKS_DIR), 'utf8').catch(() => undefined) : undefined;
    if (text === undefined) throw new AppError('OPS_RUNBOOK_NOT_FOUND', `no runbook for ${alert}`, 404);
    // A page of its own (a link opened in a new tab) whose article the console also shows in place.
    const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>Runbook ${alert}</title><link rel="stylesheet" href="/ops/app.css"></head>
<body><main><article class="runbook" id="runbook" data-alert="${alert}">${runbookHtml(text)}</article></main></body></html>`;
    return secure(reply, 'text/html; charset=utf-8').send(page);
  });
}

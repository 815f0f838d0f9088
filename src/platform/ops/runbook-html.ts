import { posix } from 'node:path';
import { marked } from 'marked';
import sanitizeHtml from 'sanitize-html';

/**
 * A runbook (docs/runbooks/<alert>.md) as HTML for the console, rendered here (marked, GitHub
 * flavour) and sanitised (sanitize-html: an allowlist of tags and attributes, no script, no style,
 * no event handler, links https/http only), so the page shows it under the console's own CSP with no
 * inline script. A link to another runbook opens it in the console; a link to another file of the
 * repository is shown as its path (the console serves no other file).
 */

const RUNBOOK_LINK = /^([A-Za-z][A-Za-z0-9]{0,80})\.md(#[\w-]*)?$/;

function linkOf(href: string | undefined): sanitizeHtml.Tag {
  if (!href) return { tagName: 'span', attribs: {} };
  const runbook = RUNBOOK_LINK.exec(href);
  if (runbook) return { tagName: 'a', attribs: { href: `#runbook/${runbook[1]}` } };
  if (/^https?:\/\//.test(href)) return { tagName: 'a', attribs: { href, target: '_blank', rel: 'noopener noreferrer' } };
  // Relative to docs/runbooks/ in the repository.
  return { tagName: 'span', attribs: { class: 'repo-path', title: posix.normalize(posix.join('docs/runbooks', href)) } };
}

export function runbookHtml(markdown: string): string {
  const html = marked.parse(markdown, { async: false, gfm: true });
  return sanitizeHtml(html, {
    allowedTags: ['h1', 'h2', 'h3', 'h4', 'p', 'ul', 'ol', 'li', 'a', 'span', 'code', 'pre', 'strong', 'em', 'blockquote', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'hr', 'br'],
    allowedAttributes: { a: ['href', 'target', 'rel'], span: ['class', 'title'], th: ['align', 'scope'], td: ['align'] },
    allowedSchemes: ['https', 'http'],
    allowProtocolRelative: false,
    // A table's header cells head their column (scope), as the console's own tables do.
    transformTags: { a: (_tag, attribs) => linkOf(attribs.href), th: (_tag, attribs) => ({ tagName: 'th', attribs: { ...attribs, scope: 'col' } }) },
  });
}

import type { ResyncNeeded } from './client-events.ts';
import { errorOfResponse } from './errors.ts';
import type { Rest } from './rest.ts';
import type { Wire } from './wire.ts';

/** Events per page of the stream read after a reconnect. */
const RESUME_PAGE = 500;

/**
 * Reads the caller's event stream (GET /api/events) after the cursor `cursor()` names, page by
 * page, handing each event to `dispatch` and each page's end to `moved`, until a page comes back
 * empty. Answers what the service said when it refused the cursor (410 past its retention, 400 not
 * its own or ahead of its head): those events cannot be had, the caller starts over.
 */
export async function readEventsAfter(
  rest: Rest,
  cursor: () => string | undefined,
  dispatch: (name: string, payload: Wire) => void,
  moved: (next: string) => void,
): Promise<ResyncNeeded | undefined> {
  for (;;) {
    const after = cursor();
    if (after === undefined) return undefined;
    const res = await rest.request('GET', `/api/events?after=${encodeURIComponent(after)}&limit=${RESUME_PAGE}`);
    if (res.status === 410 || res.status === 400) {
      const { code, status } = await errorOfResponse(res);
      return { code, status, cursor: after };
    }
    if (!res.ok) throw await errorOfResponse(res);
    const page = (await res.json()) as { events: { cursor: string; name: string; payload: Wire }[]; next: string };
    for (const e of page.events) dispatch(e.name, e.payload);
    moved(page.next);
    if (page.events.length === 0) return undefined;
  }
}

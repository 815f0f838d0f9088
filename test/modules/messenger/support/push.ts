import type { MediaJoinMinter } from '../../../../src/modules/messenger/calls/media-join.ts';
import { messengerPushKinds } from '../../../../src/modules/messenger/realtime-dispatch/register.ts';
import { createPush, type Push } from '../../../../src/platform/push/index.ts';

/** A minter for tests that only write rows: nothing they do mints a media join. */
const noJoins: MediaJoinMinter = () => Promise.reject(new Error('this test mints no media join'));

/**
 * The push part with the messenger's kinds registered as the module registers them (register.ts):
 * for tests that write or dispatch the messenger's rows without building the app.
 */
export function messengerPush(mintJoin: MediaJoinMinter = noJoins): Push {
  const push = createPush();
  push.registerKinds(messengerPushKinds(mintJoin));
  return push;
}

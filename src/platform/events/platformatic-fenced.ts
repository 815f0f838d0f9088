import type { Producer } from '@platformatic/kafka';
import type { Logger } from '../observability/logger.ts';
import { withTimeout } from '../time.ts';
import type { FencedPublisher, OutgoingMessage } from './bus.ts';
import { EventBusFencedError, EventBusUnavailableError } from './errors.ts';
import { isFenced } from './kafka-fenced.ts';
import { chunkByBytes, isKafkaUnreachable } from './kafka-util.ts';
import { newProducer, toRecords, type PlatformaticConnection } from './platformatic-clients.ts';

/**
 * kafka-fenced.ts on @platformatic/kafka: one transactional producer per transactional.id, one
 * transaction per publish. The library's first beginTransaction sends InitProducerId with the
 * transactional.id, which bumps the epoch and makes the coordinator abort what an older producer of
 * the id left open, exactly as kafkajs's does; reset() drops the producer so the next publish does it again.
 */
export function createPlatformaticFencedPublisher(o: {
  connection: PlatformaticConnection;
  transactionalId: string;
  maxRequestBytes: number;
  log: Logger;
  open(): boolean;
}): FencedPublisher & { stop(): Promise<void> } {
  let producer: Producer | undefined;

  function current(): Producer {
    if (!o.open()) throw new EventBusUnavailableError('event bus stopped');
    producer ??= newProducer(o.connection, o.transactionalId);
    return producer;
  }
  function retire(p: Producer | undefined): void {
    if (!p) return;
    if (producer === p) producer = undefined;
    void p.close(true).catch(() => undefined);
  }

  return {
    transactionalId: o.transactionalId,
    reset: () => retire(producer),
    async publish(messages: readonly OutgoingMessage[]) {
      if (messages.length === 0) return;
      const p = current();
      let tx: Awaited<ReturnType<Producer['beginTransaction']>> | undefined;
      try {
        tx = await p.beginTransaction();
        for (const chunk of chunkByBytes(messages, o.maxRequestBytes)) await tx.send({ messages: toRecords(chunk) });
        await tx.commit();
      } catch (err) {
        if (tx && !tx.completed) await withTimeout(tx.abort(), o.connection.requestTimeoutMs, 'kafka transaction abort').catch(() => undefined);
        retire(p);
        if (isFenced(err)) {
          o.log.warn({ transactionalId: o.transactionalId, err: (err as Error).message }, 'kafka fenced this publisher: another replica took it over');
          throw new EventBusFencedError(`kafka fenced the publisher ${o.transactionalId}: ${(err as Error).message}`, { cause: err });
        }
        if (isKafkaUnreachable(err)) throw new EventBusUnavailableError(`kafka unreachable: ${(err as Error).message}`, { cause: err });
        throw err;
      }
    },
    async stop() {
      const p = producer;
      producer = undefined;
      if (p) await withTimeout(p.close(true), 2000, 'kafka fenced producer close').catch(() => undefined);
    },
  };
}

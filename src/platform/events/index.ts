/** The event bus's public surface: envelope, port, adapters, consumer definitions, topic helpers. */
export {
  defineConsumer,
  type BackoffPolicy,
  type BusHealth,
  type ConsumerDefinition,
  type ConsumerHandle,
  type ConsumerRuntime,
  type EventBus,
  type IncomingMessage,
  type OutgoingMessage,
  type TopicReader,
  type TopicSpec,
} from './bus.ts';
export { createEventBus, type EventBusSettings } from './create-bus.ts';
export { eventBusSettings } from './settings.ts';
export { createKafkaBus, type KafkaBusOptions } from './kafka-bus.ts';
export { createInProcessBus, type InProcessBusOptions } from './in-process-bus.ts';
export { envelopeFromWire, envelopeToWire, HEADER, POISON, type EventEnvelope, type WireMessage } from './envelope.ts';
export { EventBusUnavailableError, isPoisonMessageError, PoisonMessageError } from './errors.ts';
export { DLQ_HEADER } from './dead-letter.ts';
export { dlqTopicOf, topicsToCreate, withPrefix, type CatalogueTopic } from './topics.ts';
export { EVENTS_DEFAULTS, type EventsTuning } from './defaults.ts';

import { EVENTS_DEFAULTS } from './platform/events/defaults.ts';
import type { CatalogueTopic } from './platform/events/topics.ts';

/**
 * The product's Kafka topics (docs/architecture.md, "Event contracts"). Names are the real product names;
 * tests add a prefix at runtime. `consumed` means a consumer in this service reads the topic, so
 * it gets a `.dlq` twin. Producers and consumers name topics through TOPICS, never by literal.
 */
export const TOPICS = {
  identityUsers: 'pin.identity.users.v1',
  identityAccess: 'pin.identity.access.v1',
  sessionEnded: 'pin.user-activity.session-ended.v1',
  propertyObjectViewEnded: 'pin.user-activity.property-object-view-ended.v1',
  messagePosted: 'pin.messenger.message-posted.v1',
  notificationDispatched: 'pin.notifications.dispatched.v1',
} as const;

export type TopicName = (typeof TOPICS)[keyof typeof TOPICS];

export interface EventTopic extends CatalogueTopic {
  name: TopicName;
  /** event-type header values carried by the topic. */
  eventTypes: readonly string[];
  /** Payload field used as the message key. */
  keyField: string;
  producer: string;
  consumers: readonly string[];
}

/** The catalogue's partition count: the kernel's (the service creates topics with it). */
const PARTITIONS = EVENTS_DEFAULTS.kafkaTopicPartitions;

export const EVENT_TOPICS: readonly EventTopic[] = [
  {
    name: TOPICS.identityUsers,
    partitions: PARTITIONS,
    consumed: true,
    eventTypes: ['UserUpsertedKafkaEvent', 'UserBlockedKafkaEvent'],
    keyField: 'UserId',
    producer: 'identity',
    consumers: ['messenger user replica (skips UserBlockedKafkaEvent)'],
  },
  {
    name: TOPICS.identityAccess,
    partitions: PARTITIONS,
    consumed: false,
    eventTypes: ['UserAccessChangedKafkaEvent'],
    keyField: 'UserId',
    producer: 'identity',
    consumers: ['external: crm, catalog, gateway'],
  },
  {
    name: TOPICS.sessionEnded,
    partitions: PARTITIONS,
    consumed: false,
    eventTypes: ['SessionEndedKafkaEvent'],
    keyField: 'SessionId',
    producer: 'user-activity',
    consumers: ['external'],
  },
  {
    name: TOPICS.propertyObjectViewEnded,
    partitions: PARTITIONS,
    consumed: true,
    eventTypes: ['PropertyObjectViewEndedKafkaEvent'],
    keyField: 'PropertyObjectViewId',
    producer: 'user-activity',
    consumers: ['user-activity stats consumer'],
  },
  {
    name: TOPICS.messagePosted,
    partitions: PARTITIONS,
    consumed: true,
    eventTypes: ['MessagePostedKafkaEvent'],
    keyField: 'ChatId',
    producer: 'messenger',
    consumers: ['notifications'],
  },
  {
    name: TOPICS.notificationDispatched,
    partitions: PARTITIONS,
    consumed: false,
    eventTypes: ['NotificationDispatchedEvent'],
    keyField: 'NotificationId',
    producer: 'notifications',
    consumers: ['external'],
  },
];

import type { KafkaClientName } from '../../src/platform/events/kafka-options.ts';

/**
 * The client the bus runs on in these tests: KAFKA_CLIENT of the test run (kafkajs unless it says
 * platformatic), so one switch runs the whole Kafka suite on either (buildTestApp reads it too).
 */
export const testKafkaClient: KafkaClientName = process.env.KAFKA_CLIENT === 'platformatic' ? 'platformatic' : 'kafkajs';

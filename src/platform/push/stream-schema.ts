import { named } from '../http/index.ts';
import { eventNameOf } from './types.ts';

/**
 * An event of the event stream as the API document describes it: one named variant per event name
 * (`MessageReceivedEvent`: `{ cursor, name: 'message_received', payload: MessageFrame }`), told
 * apart by `name` (a discriminator), its payload the frame schema the owning module registered with
 * its kinds. Filled while the modules register their kinds, read when the document is built; the
 * route serializes its answer with JSON.stringify, so this describes the answer and shapes nothing.
 */
export interface StreamEventSchema {
  oneOf: object[];
  discriminator: { propertyName: 'name'; mapping: Record<string, string> };
}

export const newStreamEventSchema = (): StreamEventSchema => ({ oneOf: [], discriminator: { propertyName: 'name', mapping: {} } });

const pascal = (event: string) => event.replace(/(^|_)([a-z])/g, (_m, _sep, c: string) => c.toUpperCase());

/** Adds the variant of `kind`'s event, whose payload is `frame` (a JSON Schema, named by its title). */
export function addStreamEvent(schema: StreamEventSchema, kind: string, frame: object): void {
  const event = eventNameOf(kind);
  const name = `${pascal(event)}Event`;
  schema.oneOf.push(
    named(name, {
      type: 'object',
      required: ['cursor', 'name', 'payload'],
      properties: {
        cursor: { type: 'string', description: 'This event’s position, opaque: ask again with after=<the last one received>' },
        name: { type: 'string', enum: [event], description: 'The hub event name it was pushed as' },
        payload: frame,
      },
    }),
  );
  schema.discriminator.mapping[event] = `#/components/schemas/${name}`;
}

/**
 * How deep a value inside an event may nest (objects and arrays, counted from the event itself).
 * Deeper events are refused at the edge (`validation_failed`): the privacy guard checks every
 * level up to here, and nothing deeper reaches storage unchecked or overflows a recursive
 * serializer.
 */
export const MAX_EVENT_DEPTH = 32;

import { MAX_COUNTRIES_PER_ROOM_COUNT, MAX_HEAVY_ADDRESSES, type BusTopic, type BusTopics } from './bus-topics';

/**
 * Whether a payload that came from another node has its topic's shape: the fields subscribers
 * read, with their JSON types. Minimal on purpose (the other node is a trusted peer running the
 * same code, perhaps one version apart); what it guards against is a subscriber throwing on, or
 * acting on, a message another program or version put on the subject.
 */
export type BusPayloadCheck = (value: unknown) => boolean;

type Fields = Record<string, unknown>;

const isFields = (value: unknown): value is Fields => typeof value === 'object' && value !== null && !Array.isArray(value);
const isText = (value: unknown): value is string => typeof value === 'string';
const isTextOrNull = (value: unknown): boolean => value === null || typeof value === 'string';
const isSeq = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
const isTime = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value);

const isOverlayChange = (change: unknown): boolean => {
  if (!isFields(change)) return false;
  if (change.kind === 'hide') {
    return isText(change.overlayId) && isText(change.hiddenAt) && (change.updatedAt === undefined || isText(change.updatedAt)) && (change.deleted === undefined || change.deleted === true);
  }
  if (change.kind !== 'show' && change.kind !== 'update') return false;
  const overlay = change.overlay;
  return isFields(overlay) && isText(overlay.id) && isText(overlay.type) && isText(overlay.broadcastId) && typeof overlay.active === 'boolean';
};

const isStoredVote = (vote: unknown): boolean =>
  isFields(vote) &&
  isText(vote.eventId) &&
  isText(vote.sessionId) &&
  isTextOrNull(vote.userId) &&
  isText(vote.broadcastId) &&
  isTime(vote.timestampMs) &&
  isTime(vote.receivedAtMs) &&
  isText(vote.data);

const isListOf = (value: unknown, isItem: (item: unknown) => boolean, max = Infinity): boolean =>
  Array.isArray(value) && value.length <= max && value.every(isItem);

const isCountryViewers = (entry: unknown): boolean => Array.isArray(entry) && entry.length === 2 && isText(entry[0]) && isSeq(entry[1]);

const isStoredEntry = (entry: unknown): boolean =>
  isFields(entry) && isText(entry.eventId) && isText(entry.sessionId) && isTextOrNull(entry.userId) && isText(entry.broadcastId) && isText(entry.data);

const isRoomCount = (room: unknown): boolean =>
  isFields(room) &&
  isSeq(room.tenantSeq) &&
  isText(room.broadcastId) &&
  isSeq(room.campaignId) &&
  isSeq(room.viewers) &&
  (room.countries === undefined || isListOf(room.countries, isCountryViewers, MAX_COUNTRIES_PER_ROOM_COUNT));

const isNodeSockets = (sockets: unknown): boolean =>
  isFields(sockets) &&
  isListOf(sockets.tenants, (entry) => isFields(entry) && isSeq(entry.tenantSeq) && isSeq(entry.connections)) &&
  isListOf(sockets.addresses, (entry) => isFields(entry) && isText(entry.address) && isSeq(entry.connections), MAX_HEAVY_ADDRESSES) &&
  isListOf(sockets.tenantAddresses, (entry) => isFields(entry) && isSeq(entry.tenantSeq) && isText(entry.address) && isSeq(entry.connections), MAX_HEAVY_ADDRESSES);

const isErasureNotice = (value: unknown): boolean =>
  isFields(value) && isText(value.jobId) && isSeq(value.tenantSeq) && isText(value.userHash) && isTextOrNull(value.userId);

/**
 * Which topics a bus between nodes carries to the other nodes, each with the check a payload
 * from another node passes before this node's subscribers see it; `null`: the topic stays on
 * the node that published it. A new topic must be decided here (the type requires every topic).
 *
 * `apiKey.revoked` and `broadcast.registered` stay on their node: the metadata change feed
 * (PostgreSQL LISTEN/NOTIFY) already tells every node sharing the metadata, whose services then
 * announce the change on their own bus (`TenantService` re-announces another node's revocation),
 * in every cluster mode, with or without NATS. Carrying them on the bus too would announce them twice.
 */
export const BUS_TOPICS_ACROSS_NODES: { readonly [T in BusTopic]: BusPayloadCheck | null } = {
  'events.stored': (value) => isFields(value) && isSeq(value.tenantSeq),
  'content.changed': (value) => isFields(value) && isSeq(value.tenantSeq) && isText(value.broadcastId) && isOverlayChange(value.change),
  'broadcast.registered': null,
  'poll.voted': (value) => isFields(value) && isSeq(value.tenantSeq) && Array.isArray(value.votes) && value.votes.every(isStoredVote),
  'session.left': (value) => isFields(value) && isSeq(value.tenantSeq) && Array.isArray(value.sessionIds) && value.sessionIds.every(isText),
  'apiKey.revoked': null,
  'user.erasing': isErasureNotice,
  'user.erased': isErasureNotice,
  'viewers.counted': (value) =>
    isFields(value) &&
    isText(value.node) &&
    isTime(value.intervalMs) &&
    (value.intervalMs as number) > 0 &&
    Array.isArray(value.rooms) &&
    value.rooms.every(isRoomCount) &&
    (value.sockets === undefined || isNodeSockets(value.sockets)) &&
    (value.sessionsUnsure === undefined || value.sessionsUnsure === true),
  'contest.entered': (value) => isFields(value) && isSeq(value.tenantSeq) && Array.isArray(value.entries) && value.entries.every(isStoredEntry),
  'session.moved': (value) => isFields(value) && isSeq(value.tenantSeq) && isText(value.sessionId) && isText(value.broadcastId) && isText(value.node) && isSeq(value.revision),
};

/**
 * What another node receives of a payload: the erasure notices without the userId in clear
 * (the other nodes' subscribers match the user by `userHash`, as for a job resumed after a
 * restart), so that the identifier being erased never travels between nodes; every other
 * payload as it is.
 */
export function payloadForOtherNodes<T extends BusTopic>(topic: T, payload: BusTopics[T]): BusTopics[T] {
  if (topic === 'user.erasing' || topic === 'user.erased') return { ...(payload as BusTopics['user.erasing']), userId: null } as BusTopics[T];
  return payload;
}

import type { IncomingMessage } from 'node:http';
import { CLOSE_CODES, detectPii, REALTIME_SUBPROTOCOL, SESSION_ID_PATTERN, USER_ID_MAX_LENGTH } from '@svc/protocol';
import type { Tenant } from '@svc/storage';
import type { AdmissionTicket } from './address-admission';

const CONTENT_ID_PATTERN = /^[^\u0000-\u001f\u007f]{1,128}$/;
const SESSION_ID = new RegExp(SESSION_ID_PATTERN);

/** Who an admitted socket is. */
export interface AdmittedViewer {
  tenant: Tenant;
  apiKey: string;
  sessionId: string;
  /** The broadcast it watches. */
  contentId: string;
  userId: string | null;
}

/** An admitted viewer, or the close code and reason of a refusal (and how the refusal metric counts it). */
export type ViewerAdmission =
  | { admitted: true; viewer: AdmittedViewer }
  | { admitted: false; code: number; reason: string; refusal?: 'address_share' | 'tenant_connections' };

export interface ViewerAdmissionDeps {
  authenticate(apiKey: string): Promise<Tenant | null>;
  /** Open sockets one tenant may hold (its share per address is a part of it). */
  maxConnectionsPerTenant: number;
  /** Takes one of the tenant's socket slots (false when all are taken, here or, across nodes, with the other nodes' sockets). */
  takeSlot(tenantSeq: number, max: number): boolean;
}

/**
 * Whether an upgraded socket may join, checked in this order: its subprotocol, its API key (a
 * missing or wrong one costs its address more upgrades), the tenant's allowed origins, the
 * session, content and user ids, then the caps: the address's share of the tenant's
 * connections, and one of the tenant's slots, which an admitted viewer holds.
 */
export async function admitViewer(
  protocol: string,
  request: IncomingMessage,
  params: URLSearchParams,
  ticket: AdmissionTicket,
  deps: ViewerAdmissionDeps,
): Promise<ViewerAdmission> {
  const refuse = (code: number, reason: string, refusal?: 'address_share' | 'tenant_connections'): ViewerAdmission => ({ admitted: false, code, reason, refusal });
  if (request.headers['sec-websocket-protocol'] && protocol !== REALTIME_SUBPROTOCOL) {
    return refuse(CLOSE_CODES.unsupportedProtocol, 'unsupported_protocol');
  }
  const apiKey = params.get('apiKey');
  if (!apiKey) {
    ticket.chargeBadKey();
    return refuse(CLOSE_CODES.invalidApiKey, 'api_key_missing');
  }
  const tenant = await deps.authenticate(apiKey);
  if (!tenant) {
    ticket.chargeBadKey();
    return refuse(CLOSE_CODES.invalidApiKey, 'invalid_api_key');
  }
  const origin = request.headers.origin;
  if (origin && tenant.settings.allowedOrigins.length && !tenant.settings.allowedOrigins.includes(origin)) {
    return refuse(CLOSE_CODES.originNotAllowed, 'origin_not_allowed');
  }
  const sessionId = params.get('sessionId') ?? '';
  const contentId = params.get('contentId') ?? '';
  const userId = params.get('userId');
  if (!SESSION_ID.test(sessionId)) return refuse(CLOSE_CODES.badRequest, 'invalid_session_id');
  // The content id becomes the room's broadcast id, stored with every event and in the broadcast registry.
  if (!CONTENT_ID_PATTERN.test(contentId) || detectPii(contentId)) return refuse(CLOSE_CODES.badRequest, 'invalid_content_id');
  if (userId !== null && (!CONTENT_ID_PATTERN.test(userId) || userId.length > USER_ID_MAX_LENGTH || detectPii(userId))) {
    return refuse(CLOSE_CODES.badRequest, 'invalid_user_id');
  }
  // One address never holds more than its share of the tenant's connections.
  if (!ticket.joinTenant(tenant.seq, deps.maxConnectionsPerTenant)) {
    return refuse(CLOSE_CODES.tryAgainLater, 'too_many_connections_from_address', 'address_share');
  }
  if (!deps.takeSlot(tenant.seq, deps.maxConnectionsPerTenant)) {
    return refuse(CLOSE_CODES.tryAgainLater, 'too_many_connections', 'tenant_connections');
  }
  return { admitted: true, viewer: { tenant, apiKey, sessionId, contentId, userId } };
}

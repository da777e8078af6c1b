/** Codes the SDK rejects or reports with. Server codes (e.g. `invalid_api_key`) pass through. */
export type SdkErrorCode =
  | 'not_configured'
  | 'invalid_api_key'
  | 'config_unavailable'
  | 'connection_failed'
  | 'origin_not_allowed'
  | 'replaced'
  | 'disconnected'
  | 'invalid_argument'
  | (string & {});

/** The error type of every SDK promise rejection and `error` event. */
export class SvcError extends Error {
  readonly code: SdkErrorCode;
  constructor(code: SdkErrorCode, message: string) {
    super(message);
    this.name = 'SvcError';
    this.code = code;
  }
}

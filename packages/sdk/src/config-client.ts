import type { SdkConfig } from '@svc/protocol';
import type { SvcError } from './errors';
import { SvcError as SdkError } from './errors';
import { localStore } from './local-store';

/** Runtime configuration delivered by `GET /v1/sdk/config` (spec 2.2 plus `country`). */
export type SvcConfig = SdkConfig;

interface Cached {
  etag: string | null;
  config: SvcConfig;
}

const cacheKey = (apiKey: string) => `svc:config:${apiKey}`;

/**
 * Fetches the configuration once per start, stale-while-revalidate: a cached copy (memory,
 * then localStorage) is served at once while `If-None-Match` asks whether it changed.
 */
export class ConfigClient {
  private current: SvcConfig | null = null;
  private etag: string | null = null;
  private fetched: Promise<SvcConfig> | null = null;

  constructor(
    private readonly apiKey: string,
    private readonly baseURL: string,
    private readonly onUpdate: (config: SvcConfig) => void,
  ) {
    const raw = localStore.get(cacheKey(apiKey));
    if (raw) {
      try {
        const cached = JSON.parse(raw) as Cached;
        this.current = cached.config;
        this.etag = cached.etag;
      } catch {
        localStore.remove(cacheKey(apiKey));
      }
    }
  }

  /** The configuration known now (cached or fetched), or null. */
  get config(): SvcConfig | null {
    return this.current;
  }

  /** Starts the one request of this start; later calls share it (after a failure, try again). */
  load(): Promise<SvcConfig> {
    this.fetched ??= this.request().catch((error: unknown) => {
      this.fetched = null;
      throw error;
    });
    // With a cached copy there is no need to wait for the network.
    return this.current ? Promise.resolve(this.current) : this.fetched;
  }

  /** Resolves when the network answered (or failed, when a cached copy exists). */
  revalidated(): Promise<SvcConfig | null> {
    return (this.fetched ?? this.load()).then(
      (config) => config,
      () => this.current,
    );
  }

  private async request(): Promise<SvcConfig> {
    const url = `${this.baseURL.replace(/\/+$/, '')}/v1/sdk/config?apiKey=${encodeURIComponent(this.apiKey)}`;
    let response: Response;
    try {
      // no-cache: always ask the server (conditionally), so that a change made in the dashboard
      // reaches the next start even while the browser's HTTP cache entry is fresh.
      response = await fetch(url, { headers: this.etag ? { 'if-none-match': this.etag } : {}, credentials: 'omit', cache: 'no-cache' });
    } catch (error) {
      if (this.current) return this.current;
      throw new SdkError('config_unavailable', `Could not reach ${url}: ${(error as Error).message}`);
    }
    if (response.status === 304 && this.current) return this.current;
    if (!response.ok) {
      const problem = (await response.json().catch(() => ({}))) as { code?: string; detail?: string };
      const error: SvcError = new SdkError(problem.code ?? 'config_unavailable', problem.detail ?? `The configuration request answered ${response.status}.`);
      if (response.status === 401 || response.status === 400) {
        // A revoked or wrong key: forget what was cached for it.
        localStore.remove(cacheKey(this.apiKey));
        this.current = null;
      }
      if (this.current) return this.current;
      throw error;
    }
    const config = (await response.json()) as SvcConfig;
    this.current = config;
    this.etag = response.headers.get('etag');
    localStore.set(cacheKey(this.apiKey), JSON.stringify({ etag: this.etag, config } satisfies Cached));
    this.onUpdate(config);
    return config;
  }
}

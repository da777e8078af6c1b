import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDashboard } from '@svc/dashboard/build';
import { preferredEncoding } from '../src/routes/dashboard-assets';
import { DASHBOARD_PATHS } from '../src/routes/home';
import { startTestApp, type TestApp } from './test-app';

describe('dashboard assets', () => {
  let t: TestApp;
  let script: string;
  beforeAll(async () => {
    script = (await buildDashboard()).script;
    t = await startTestApp();
  }, 60_000);
  afterAll(async () => t?.close());

  it('serves the page on every app path, revalidated each visit, naming the content-hashed script', async () => {
    expect(script).toMatch(/^dashboard-[0-9a-f]{12}\.js$/);
    for (const path of DASHBOARD_PATHS) {
      const page = await t.app.inject({ url: path, headers: { accept: 'text/html' } });
      expect(page.statusCode, path).toBe(200);
      expect(page.headers['cache-control'], path).toBe('no-cache');
      expect(page.body, path).toContain(`<script src="/assets/${script}"></script>`);
    }
  });

  it('sends the script precompressed as the browser accepts, immutable for a year', async () => {
    const get = (acceptEncoding?: string) => t.app.inject({ url: `/assets/${script}`, headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} });
    const plain = await get();
    expect(plain.headers['content-encoding']).toBeUndefined();
    const br = await get('gzip, deflate, br, zstd');
    const gzip = await get('gzip, br;q=0');
    expect(br.headers['content-encoding']).toBe('br');
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(brotliDecompressSync(br.rawPayload).equals(plain.rawPayload)).toBe(true);
    expect(gunzipSync(gzip.rawPayload).equals(plain.rawPayload)).toBe(true);
    expect(br.rawPayload.length).toBeLessThan(plain.rawPayload.length / 2);
    for (const response of [plain, br, gzip]) {
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/javascript/);
      expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(response.headers.vary).toMatch(/accept-encoding/i);
    }
  });

  it('answers 404 for an asset no build made', async () => {
    const response = await t.app.inject({ url: '/assets/dashboard-000000000000.js', headers: { accept: 'application/json' } });
    expect(response.statusCode).toBe(404);
    expect(response.json().code).toBe('not_found');
  });

  it('picks the best stored encoding by the Accept-Encoding weights', () => {
    expect(preferredEncoding(undefined)).toBeNull();
    expect(preferredEncoding('identity')).toBeNull();
    expect(preferredEncoding('gzip, br')).toBe('br');
    expect(preferredEncoding('br;q=0.5, gzip')).toBe('gzip');
    expect(preferredEncoding('BR;Q=0')).toBeNull();
    expect(preferredEncoding('*')).toBe('br');
    expect(preferredEncoding('*;q=0.1, gzip;q=0.9')).toBe('gzip');
    expect(preferredEncoding('br;q=0, *')).toBe('gzip');
  });

  it('answers browsers on an unknown path with the app as a 404 page, API clients and /v1 with problem+json', async () => {
    const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const page = await t.app.inject({ url: '/nope?x=1', headers: { accept: browser } });
    expect(page.statusCode).toBe(404);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain(`<script src="/assets/${script}"></script>`);
    expect(page.body).toContain('Page not found');
    expect(String(page.headers['content-security-policy'])).toMatch(/script-src 'self'/);
    for (const [url, accept, method] of [['/nope', 'application/json', 'GET'], ['/nope', undefined, 'GET'], ['/v1/nope', browser, 'GET'], ['/nope', browser, 'POST']] as const) {
      const response = await t.app.inject({ url, method, headers: accept ? { accept } : {} });
      expect(response.statusCode, `${method} ${url} ${accept}`).toBe(404);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json().code).toBe('not_found');
      expect(String(response.headers['content-security-policy'])).toMatch(/default-src 'none'/);
    }
  });
});

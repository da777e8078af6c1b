import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Whether browser tests can run. In CI a missing browser is a failure, never a skip;
 * locally the tests skip with a clear message.
 */
export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  if (process.env.CI) throw new Error(`${CHROMIUM_PATH} is missing: .ci/run must install Debian's chromium package.`);
  console.warn(`Skipping browser tests: ${CHROMIUM_PATH} not found (apt-get install chromium).`);
  return false;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: FLAGS });
}

/** A page of another origin, as a player embedding the SDK would be (`/player` or any path). */
export interface PlayerPage {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  close(): void;
}

export async function startPlayerPage(): Promise<PlayerPage> {
  const server = createServer((_request, response) => response.setHeader('content-type', 'text/html').end('<!doctype html><title>Player</title>'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

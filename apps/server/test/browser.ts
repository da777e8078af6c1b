import { existsSync } from 'node:fs';
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

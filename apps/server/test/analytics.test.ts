import { describe } from 'vitest';
import { analyticsOverviewTests } from './analytics-overview-suite';
import { startTestApp } from './test-app';

describe('GET /v1/analytics/overview', () => analyticsOverviewTests(startTestApp));

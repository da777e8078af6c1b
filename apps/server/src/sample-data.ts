import { sampleDataset } from '@svc/simulator';
import type { Tenant } from '@svc/storage';
import type { Services } from './services';

const CHUNK = 500;

/**
 * Fills a new demo tenant with weeks of sample activity (campaigns, broadcasts, sponsors,
 * polls, orders across countries), so that the first look at the dashboard is a full one.
 */
export async function loadSampleData(services: Services, tenant: Tenant): Promise<number> {
  const data = sampleDataset(services.clock.now());
  for (const campaign of data.campaigns) await services.content.createCampaign(tenant, campaign).catch(() => undefined);
  for (const sponsor of data.sponsors) await services.content.createSponsor(tenant, sponsor).catch(() => undefined);
  for (const broadcast of data.broadcasts) {
    await services.content.createBroadcast(tenant, { id: broadcast.id, campaignId: broadcast.campaignId, title: broadcast.title }).catch(() => undefined);
  }
  // Votes count only on polls the service knows: the sample's polls are created, and its events renamed to their ids.
  const pollIds = new Map<string, string>();
  for (const poll of data.polls) {
    const created = await services.content.createOverlay(tenant, poll.broadcastId, { type: 'poll', question: poll.question, options: poll.options });
    pollIds.set(poll.pollId, created.id);
  }
  const events = data.events.map((event) => {
    const pollId = (event.data as { pollId?: string }).pollId;
    return pollId && pollIds.has(pollId) ? { ...event, data: { ...(event.data as object), pollId: pollIds.get(pollId) } } : event;
  });
  let accepted = 0;
  for (let i = 0; i < events.length; i += CHUNK) {
    const result = await services.ingest.ingest({ tenant, source: 'server', country: null, body: { events: events.slice(i, i + CHUNK) }, bodyBytes: 0 });
    accepted += result.accepted;
  }
  return accepted;
}

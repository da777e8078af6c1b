import type { FastifyRequest } from 'fastify';
import type { Services } from './services';

/** Country of the viewer behind a public-key request: trusted header, address, tenant fallback. */
export function viewerCountry(request: FastifyRequest, services: Services): string | null {
  const { countryHeader } = services.config;
  const header = countryHeader ? request.headers[countryHeader] : undefined;
  return services.countries.resolve({
    header: typeof header === 'string' ? header : null,
    ip: request.ip,
    fallback: request.tenant.settings.fallbackCountry,
  });
}

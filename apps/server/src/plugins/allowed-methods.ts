import type { FastifyInstance, RouteOptions } from 'fastify';

interface KnownRoute {
  pattern: RegExp;
  /** A catch-all such as the CORS plugin's `OPTIONS *`: adds its method, makes no path known. */
  catchAll: boolean;
  methods: string[];
}

/**
 * Every route's path pattern and methods, collected as routes are added, so that a request
 * for a known path with a method it does not support can be answered 405 with `Allow`
 * instead of 404.
 */
export class AllowedMethods {
  private readonly routes: KnownRoute[] = [];

  /** Records routes added from now on (call before registering them). */
  collect(app: FastifyInstance): void {
    app.addHook('onRoute', (route: RouteOptions) => this.add(route.url, [route.method].flat()));
  }

  add(url: string, methods: string[]): void {
    const upper = methods.map((m) => m.toUpperCase());
    if (upper.includes('GET')) upper.push('HEAD');
    this.routes.push({ pattern: patternOf(url), catchAll: url === '*' || url === '/*', methods: upper });
  }

  /** The methods the path supports, sorted; empty when no route has this path. */
  of(path: string): string[] {
    const decoded = safeDecode(path);
    const matching = this.routes.filter((route) => route.pattern.test(decoded));
    if (!matching.some((route) => !route.catchAll)) return [];
    return [...new Set(matching.flatMap((route) => route.methods))].sort();
  }
}

/** A find-my-way path (`/v1/broadcasts/:id/overlays`, `/assets/*`) as a regular expression. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

function safeDecode(path: string): string {
  try {
    return decodeURI(path);
  } catch {
    return path;
  }
}

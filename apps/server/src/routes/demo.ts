import type { FastifyInstance } from 'fastify';
import { SvcError } from '@svc/protocol';
import { DEMO_BROADCAST_ID } from '../demo-broadcast';
import { pageSecurity } from '../plugins/security-headers';
import type { Services } from '../services';

/**
 * The page's own script, served from this origin so that the page's CSP allows no inline
 * script. It reads the API key and the broadcast from its own tag's data attributes.
 */
const DEMO_SCRIPT = `"use strict";
(function () {
  var script = document.currentScript;
  var canvas = document.createElement('canvas');
  canvas.width = 640; canvas.height = 360;
  var ctx = canvas.getContext('2d');
  function draw(t) {
    var g = ctx.createLinearGradient(0, 0, 640, 360);
    var hue = (t / 80) % 360;
    g.addColorStop(0, 'hsl(' + hue + ',60%,25%)');
    g.addColorStop(1, 'hsl(' + ((hue + 120) % 360) + ',60%,15%)');
    ctx.fillStyle = g; ctx.fillRect(0, 0, 640, 360);
    ctx.fillStyle = '#e11d48'; ctx.fillRect(20, 20, 64, 26);
    ctx.fillStyle = '#fff'; ctx.font = 'bold 16px system-ui'; ctx.fillText('LIVE', 32, 39);
    ctx.font = 'bold 40px system-ui'; ctx.fillText('Lions vs Falcons', 160, 190);
    ctx.font = '20px system-ui'; ctx.fillText(new Date().toLocaleTimeString(), 260, 230);
    requestAnimationFrame(draw);
  }
  requestAnimationFrame(draw);
  var video = document.getElementById('video');
  if (canvas.captureStream) video.srcObject = canvas.captureStream(30);

  SvcSDK.configure({ apiKey: script.dataset.apiKey });
  document.getElementById('player').appendChild(SvcEngagementOverlay());
  var status = document.getElementById('status');
  SvcSDK.on('viewers', function (m) { status.textContent = m.count + ' watching now'; });
  SvcSDK.setContent(script.dataset.broadcast).then(function () {
    status.textContent = 'Connected to the demo broadcast.';
  }, function (error) { status.textContent = 'Could not join: ' + error.message; });
})();
`;

/** The page: a "live" video drawn on a canvas, the overlay on top, the SDK from a plain script tag. */
function page(apiKey: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Svc demo</title><link rel="icon" href="data:,">
<style>
body{margin:0;font:16px/1.5 system-ui,sans-serif;background:#0f0d1a;color:#eee}
main{max-width:960px;margin:24px auto;padding:0 16px}
.player{position:relative;aspect-ratio:16/9;background:#000;border-radius:12px;overflow:hidden}
video{width:100%;height:100%;display:block;object-fit:cover}
code{background:#221d3a;padding:.1em .3em;border-radius:4px}
#status{color:#aaa;font-size:14px}
</style></head>
<body><main>
<h1>Svc demo: Finals Night</h1>
<div class="player" id="player"><video id="video" autoplay muted playsinline></video></div>
<p id="status">Connecting…</p>
<p>This page loads the SDK with one <code>&lt;script&gt;</code> tag and one call,
<code>SvcSDK.configure({ apiKey })</code>. Polls, the lineup, a sponsor moment, a contest and
product cards appear in turn; every tap is tracked and shows up in the dashboard.</p>
</main>
<script src="/sdk/svc-core.js"></script>
<script src="/demo/demo.js" data-api-key="${escapeAttribute(apiKey)}" data-broadcast="${escapeAttribute(DEMO_BROADCAST_ID)}"></script>
</body></html>`;
}

export async function demoRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  app.get('/demo/demo.js', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(DEMO_SCRIPT),
  );
  app.get('/demo', { schema: { hide: true }, helmet: pageSecurity(services.config) }, async (_request, reply) => {
    const tenant = await services.tenants.getTenant('demo').catch(() => null);
    // Only a public API key ever goes into a page.
    const key = tenant ? (await services.tenants.listApiKeys(tenant.seq)).find((k) => k.revokedAt === null) : undefined;
    if (!key) throw new SvcError('not_found', 'The demo needs tenant "demo" with an active API key.');
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(page(key.key));
  });
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

import type { FastifyInstance } from 'fastify';
import { SvcError } from '@svc/protocol';
import { DEMO_BROADCAST_ID } from '../demo-broadcast';
import { DEMO_IMAGES } from '../demo-images';
import { pageSecurity } from '../plugins/security-headers';
import type { Services } from '../services';

/**
 * The page's own script, served from this origin so that the page's CSP allows no inline
 * script. It reads the API key and the broadcast from its own tag's data attributes.
 */
const DEMO_SCRIPT = `"use strict";
(function () {
  var script = document.currentScript;
  var player = document.getElementById('player');
  var latencyBox = document.getElementById('latency');
  var latencyS = 0;
  // The "camera": a clock drawn on a canvas. With the simulated latency the picture is 8 s old,
  // as an HLS or DASH player's would be, and the overlay waits for the picture.
  var canvas = document.createElement('canvas');
  canvas.width = 720; canvas.height = 720;
  var ctx = canvas.getContext('2d');
  function draw(t) {
    var g = ctx.createLinearGradient(0, 0, 720, 720);
    var hue = (t / 80) % 360;
    g.addColorStop(0, 'hsl(' + hue + ',55%,24%)');
    g.addColorStop(1, 'hsl(' + ((hue + 120) % 360) + ',55%,14%)');
    ctx.fillStyle = g; ctx.fillRect(0, 0, 720, 720);
    ctx.fillStyle = '#e11d48'; ctx.fillRect(300, 250, 120, 40);
    ctx.fillStyle = '#fff'; ctx.textAlign = 'center';
    ctx.font = 'bold 22px system-ui'; ctx.fillText(latencyS ? 'LIVE −' + latencyS + ' s' : 'LIVE', 360, 278);
    ctx.font = 'bold 34px system-ui'; ctx.fillText('Lions vs Falcons', 360, 360);
    ctx.font = '28px system-ui'; ctx.fillText(new Date(Date.now() - latencyS * 1000).toLocaleTimeString(), 360, 410);
    requestAnimationFrame(draw);
  }
  requestAnimationFrame(draw);
  var video = document.getElementById('video');
  if (canvas.captureStream) video.srcObject = canvas.captureStream(30);

  SvcSDK.configure({ apiKey: script.dataset.apiKey });
  var overlay = SvcEngagementOverlay();
  player.appendChild(overlay);
  latencyBox.addEventListener('change', function () {
    latencyS = latencyBox.checked ? 8 : 0;
    overlay.player = latencyS ? { latency: latencyS } : null;
  });

  // Player sizes: the overlay lays itself out for the player's own box.
  var sizes = { phone: [390, 844], landscape: [844, 390], desktop: [1280, 720] };
  function fit(name) {
    var size = sizes[name];
    var room = document.getElementById('stage').getBoundingClientRect();
    // The whole player in view below the controls, as on the device it stands for.
    var scale = Math.min(1, room.width / size[0], Math.max(320, window.innerHeight - room.top - 12) / size[1]);
    player.style.width = Math.round(size[0] * scale) + 'px';
    player.style.height = Math.round(size[1] * scale) + 'px';
    document.querySelectorAll('[data-size]').forEach(function (b) { b.setAttribute('aria-pressed', String(b.dataset.size === name)); });
    current = name;
  }
  var current = window.innerWidth < 600 ? 'phone' : 'desktop';
  document.querySelectorAll('[data-size]').forEach(function (b) {
    b.addEventListener('click', function () { fit(b.dataset.size); });
  });
  window.addEventListener('resize', function () { fit(current); });
  fit(current);

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
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,sans-serif;background:#0f0d1a;color:#eee}
main{max-width:1320px;margin:0 auto;padding:12px 16px 32px}
h1{font-size:22px;margin:4px 0 12px}
.controls{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;margin-bottom:12px}
.sizes{display:flex;gap:4px;background:#221d3a;border-radius:12px;padding:4px}
.sizes button{font:inherit;min-height:44px;padding:0 14px;border:0;border-radius:9px;background:none;color:#ddd;cursor:pointer}
.sizes button[aria-pressed=true]{background:#5b3df5;color:#fff}
button:focus-visible,input:focus-visible{outline:3px solid #ffbf47;outline-offset:2px}
label{display:inline-flex;align-items:center;gap:8px;min-height:44px;cursor:pointer}
input[type=checkbox]{width:22px;height:22px;accent-color:#5b3df5}
#stage{display:flex;justify-content:center}
.player{position:relative;background:#000;border-radius:14px;overflow:hidden;max-width:100%}
video{width:100%;height:100%;display:block;object-fit:cover}
code{background:#221d3a;padding:.1em .3em;border-radius:4px}
#status{color:#bbb;font-size:14px}
p{max-width:70ch}
</style></head>
<body><main>
<h1>Svc demo: Finals Night</h1>
<div class="controls">
  <div class="sizes" role="group" aria-label="Player size">
    <button type="button" data-size="phone" aria-pressed="false">Phone</button>
    <button type="button" data-size="landscape" aria-pressed="false">Landscape</button>
    <button type="button" data-size="desktop" aria-pressed="false">Desktop</button>
  </div>
  <label><input type="checkbox" id="latency"> Simulated 8 s latency</label>
  <span id="status" role="status">Connecting…</span>
</div>
<div id="stage"><div class="player" id="player"><video id="video" autoplay muted playsinline></video></div></div>
<p>This page loads the SDK with one <code>&lt;script&gt;</code> tag and one call,
<code>SvcSDK.configure({ apiKey })</code>. Polls with a countdown, the lineup, a sponsor moment,
a contest and product cards appear in turn, laid out for the player's size; every tap is
tracked and shows up in the dashboard. With the simulated latency the picture runs 8 s behind
the live edge, as an HLS player's does, and each overlay waits for the moment it belongs to.</p>
</main>
<script src="/sdk/svc-core.js"></script>
<script src="/demo/demo.js" data-api-key="${escapeAttribute(apiKey)}" data-broadcast="${escapeAttribute(DEMO_BROADCAST_ID)}"></script>
</body></html>`;
}

export async function demoRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  app.get('/demo/demo.js', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(DEMO_SCRIPT),
  );
  app.get<{ Params: { name: string } }>('/demo/images/:name', { schema: { hide: true } }, async (request, reply) => {
    const name = request.params.name.replace(/\.svg$/, '');
    const svg = Object.hasOwn(DEMO_IMAGES, name) ? DEMO_IMAGES[name] : undefined;
    if (!svg) throw new SvcError('not_found', `No demo image "${request.params.name}".`);
    // Shown on customers' pages too (any origin), like the SDK.
    return reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').header('cross-origin-resource-policy', 'cross-origin').send(svg);
  });
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

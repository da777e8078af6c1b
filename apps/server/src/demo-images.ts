/** Pictures of the demo's products and its sponsor's logo, drawn as SVG (no files to ship). */
const frame = (body: string, background: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 120 120" width="120" height="120"><rect width="120" height="120" rx="16" fill="${background}"/>${body}</svg>`;

export const DEMO_IMAGES: Record<string, string> = {
  'jersey-lions': frame(
    '<path d="M38 24l-22 14 10 18 10-5v45h48V51l10 5 10-18-22-14c-4 8-11 12-22 12s-18-4-22-12z" fill="#f5c518"/><text x="60" y="82" font-family="system-ui,sans-serif" font-size="26" font-weight="700" text-anchor="middle" fill="#7a1f1f">10</text>',
    '#b3261e',
  ),
  'scarf-falcons': frame(
    '<path d="M22 40h76v18H22z" fill="#fff"/><path d="M22 40h15v18H22zM52 40h15v18H52zM82 40h16v18H82z" fill="#1e5fa8"/><path d="M70 58h16v40H70z" fill="#fff"/><path d="M70 70h16v8H70zM70 86h16v8H70z" fill="#1e5fa8"/>',
    '#0f2d52',
  ),
  'ball-signed': frame(
    '<circle cx="60" cy="60" r="36" fill="#fff"/><path d="M60 42l14 10-5 16H51l-5-16z" fill="#222"/><path d="M44 84c8-6 20-8 34-4" stroke="#1e5fa8" stroke-width="3" fill="none" stroke-linecap="round"/>',
    '#116149',
  ),
  'acme-logo': frame(
    '<path d="M60 22l34 76H76l-6-15H50l-6 15H26z" fill="#fff"/><path d="M55 70h10l-5-14z" fill="#e4572e"/>',
    '#e4572e',
  ),
};

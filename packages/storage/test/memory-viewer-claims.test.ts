import { MemoryViewerClaims } from '../src';
import { viewerClaimsContract } from './viewer-claims-contract';

viewerClaimsContract('MemoryViewerClaims', async () => {
  const claims = new MemoryViewerClaims();
  return { nodeA: claims, nodeB: claims, close: async () => {} };
});

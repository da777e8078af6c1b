import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MinHeap } from '../src/min-heap';

describe('MinHeap', () => {
  it('gives back what was pushed, smallest key first, however pushes and pops interleave', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.constant(null)), { maxLength: 300 }), (steps) => {
        const heap = new MinHeap<{ at: number }>((item) => item.at);
        const model: number[] = [];
        for (const step of steps) {
          if (step === null) {
            model.sort((a, b) => a - b);
            expect(heap.pop()?.at).toBe(model.shift());
          } else {
            heap.push({ at: step });
            model.push(step);
          }
          expect(heap.size).toBe(model.length);
          expect(heap.peek()?.at).toBe(model.length ? Math.min(...model) : undefined);
        }
      }),
    );
  });
});

/**
 * Keys known to be stored, in two generations: when the current one is full it becomes the
 * old one and the old one is dropped, so memory stays bounded while retries, which come soon
 * after the original, are still recognised.
 */
export class RecentKeys {
  private current = new Set<string>();
  private previous = new Set<string>();

  constructor(private readonly perGeneration: number) {}

  has(key: string): boolean {
    return this.current.has(key) || this.previous.has(key);
  }

  add(key: string): void {
    if (this.current.size >= this.perGeneration) {
      this.previous = this.current;
      this.current = new Set();
    }
    this.current.add(key);
  }
}

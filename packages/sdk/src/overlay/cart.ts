/** One product in the viewer's cart. */
export interface CartLine {
  productId: string;
  name: string;
  quantity: number;
  unitPrice: number;
  currency: string;
  sponsorId: string | null;
}

/** The viewer's cart and the commerce fields its events carry. */
export class Cart {
  readonly lines: CartLine[] = [];

  get count(): number {
    return this.lines.reduce((n, line) => n + line.quantity, 0);
  }

  get total(): number {
    return Math.round(this.lines.reduce((sum, line) => sum + line.quantity * line.unitPrice, 0) * 100) / 100;
  }

  get currency(): string {
    return this.lines[0]?.currency ?? 'EUR';
  }

  add(line: CartLine): void {
    const existing = this.lines.find((l) => l.productId === line.productId);
    if (existing) existing.quantity++;
    else this.lines.push({ ...line, quantity: 1 });
  }

  remove(productId: string): CartLine | null {
    const index = this.lines.findIndex((l) => l.productId === productId);
    return index < 0 ? null : this.lines.splice(index, 1)[0]!;
  }

  clear(): void {
    this.lines.splice(0);
  }

  fields(orderId: string | null = null) {
    return {
      orderId,
      sponsorId: this.lines[0]?.sponsorId ?? null,
      items: this.lines.map(({ productId, name, quantity, unitPrice, currency }) => ({ productId, name, quantity, unitPrice, currency })),
      total: this.total,
    };
  }
}

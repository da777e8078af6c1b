/** Escapes a JSON Pointer reference token (RFC 6901). */
const pointerToken = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The JSON Pointer of the first string or key in `value` that holds U+0000 ('' for the value
 * itself), or null when none does.
 */
export function pathOfNul(value: unknown): string | null {
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length) {
    const [node, path] = stack.pop()!;
    if (typeof node === 'string') {
      if (node.includes('\u0000')) return path;
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], `${path}/${i}`]);
    } else if (node !== null && typeof node === 'object') {
      const keys = Object.keys(node);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        const at = `${path}/${pointerToken(key)}`;
        if (key.includes('\u0000')) return at;
        stack.push([(node as Record<string, unknown>)[key], at]);
      }
    }
  }
  return null;
}

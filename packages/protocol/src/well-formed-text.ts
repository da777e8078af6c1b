/**
 * The one rule for text that comes from outside: every string, and every object key, is
 * well-formed UTF-16. A lone surrogate (which JSON can spell as `"\ud800"`) becomes U+FFFD, as
 * a UTF-8 decoder does with a byte it cannot read. Storage and its readers (DuckDB's JSON
 * functions among them) refuse text holding one, so it is mended here, at the edge, before
 * anything else looks at the value.
 */
declare global {
  // ES2024 (Node 20); the project's lib setting is ES2023.
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/** `text` with each lone surrogate replaced by U+FFFD (the same string when there is none). */
export function wellFormedText(text: string): string {
  return text.isWellFormed() ? text : text.toWellFormed();
}

/**
 * Whether JSON text can hold a lone surrogate once parsed: only a `\uD800`–`\uDFFF` escape makes
 * one (a decoded body's characters are well-formed already). False positives (a pair, an escaped
 * backslash before `ud8…`) only cost a walk.
 */
export function jsonMayHoldLoneSurrogate(json: string): boolean {
  // indexOf first: most JSON holds no \u escape at all, and finding none is a plain fast scan.
  const first = json.indexOf('\\u');
  return first !== -1 && SURROGATE_ESCAPE.test(first === 0 ? json : json.slice(first));
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * Makes every string and key inside `value` well-formed, in place, at any depth (the walk keeps
 * its own stack, so a deeply nested value cannot overflow the call stack). Returns the mended
 * value: a string is returned mended, a container is the same object.
 */
export function wellFormedValue<T>(value: T): T {
  if (typeof value === 'string') return wellFormedText(value) as T;
  if (value === null || typeof value !== 'object') return value;
  const stack: object[] = [value];
  while (stack.length) {
    const node = stack.pop()!;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const item: unknown = node[i];
        if (typeof item === 'string') {
          if (!item.isWellFormed()) node[i] = item.toWellFormed();
        } else if (item !== null && typeof item === 'object') stack.push(item);
      }
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      let item = record[key];
      if (typeof item === 'string') {
        if (!item.isWellFormed()) record[key] = item = item.toWellFormed();
      } else if (item !== null && typeof item === 'object') stack.push(item);
      if (!key.isWellFormed()) {
        // Two keys that differ only in their lone surrogates become one; the later one wins, as in JSON.parse.
        delete record[key];
        record[key.toWellFormed()] = item;
      }
    }
  }
  return value;
}

/**
 * Parses JSON text from a client (an HTTP body or a WebSocket frame) into a value whose every
 * string and key is well-formed. Throws what JSON.parse throws. The common case (no surrogate
 * escape in the text) costs one scan of the text besides the parse.
 */
export function parseClientJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  return jsonMayHoldLoneSurrogate(text) ? wellFormedValue(value) : value;
}

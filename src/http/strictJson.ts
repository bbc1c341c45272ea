// Finds a repeated member name in JSON text, which I-JSON (RFC 7493) and so RFC 8785 forbid, whatever the values.

interface Frame {
  readonly names: Set<string> | null;
  /** In an object, the next string is a member name. */
  expectName: boolean;
}

/**
 * Scans syntactically valid JSON text (the caller parsed it already) and answers the first member
 * name that an object repeats, comparing names after unescaping ("a" and "\u0061" are the same
 * name), or null. One pass, one frame per nesting level: bounded by the text's length.
 */
export function repeatedMemberName(text: string): string | null {
  const stack: Frame[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    const top = stack[stack.length - 1];
    if (ch === "{") {
      stack.push({ names: new Set(), expectName: true });
    } else if (ch === "[") {
      stack.push({ names: null, expectName: false });
    } else if (ch === "}" || ch === "]") {
      stack.pop();
    } else if (ch === ",") {
      if (top?.names) top.expectName = true;
    } else if (ch === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (top?.names && top.expectName) {
        const name = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.names.has(name)) return name;
        top.names.add(name);
        top.expectName = false;
      }
      i = end;
    }
    i += 1;
  }
  return null;
}

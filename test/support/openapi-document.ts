/**
 * The published OpenAPI document with every `#/components/schemas/…` reference replaced by the
 * schema it names (a copy; the document is left as served). The tests that walk the routes' inputs
 * (route-schemas, the fuzzer) read each schema where it is used, as the route declares it.
 */
export function inlineRefs<T>(doc: T): T {
  const schemas = ((doc as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {});
  const prefix = '#/components/schemas/';
  const walk = (node: unknown, seen: readonly string[]): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, seen));
    if (typeof node !== 'object' || node === null) return node;
    const ref = (node as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith(prefix)) {
      const name = decodeURIComponent(ref.slice(prefix.length));
      if (seen.includes(name)) throw new Error(`recursive schema ${[...seen, name].join(' → ')}: not inlined`);
      if (!(name in schemas)) throw new Error(`${ref} names no component`);
      return walk(schemas[name], [...seen, name]);
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, seen)]));
  };
  return walk(doc, []) as T;
}

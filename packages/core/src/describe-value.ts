// How an error message shows a value the user passed. String() hides the type (the string '0.1'
// reads as the number 0.1) and throws on objects without a primitive form; JSON.stringify throws
// on bigints. Either turns a coded input error into a bare TypeError.

const MAX_ITEMS = 8;

/** The value with its type where the type is the mistake: `the string "0.1"`, `1n (a bigint)`, `an object`. */
export function describeValue(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
    case 'bigint':
      return `${v}n (a bigint)`;
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(v);
    case 'symbol':
      return 'a symbol';
    case 'function':
      return 'a function';
    default:
      if (v === null) return 'null';
      if (Array.isArray(v)) {
        const items = v.slice(0, MAX_ITEMS).map((x: unknown) => (Array.isArray(x) ? 'an array' : describeValue(x)));
        return `[${items.join(', ')}${v.length > MAX_ITEMS ? ', ...' : ''}]`;
      }
      return 'an object';
  }
}

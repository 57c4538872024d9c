#!/usr/bin/env node
// Fails when the relative imports of the TypeScript sources under the given folders form a circle.
// Every import counts, `import type` too (as madge counts them): a circle through types is still
// two modules that cannot be read, changed or moved one without the other, and a type-only edge
// becomes a loading edge the day someone imports a value along it. Break one with a small module
// of the shared types (or a structural parameter type) that imports neither side. Dynamic
// `import()` counts too. Package imports ('@attn/core') are left to the package graph, where nx
// and pnpm already refuse circles.
//
//   node tools/lint/import-cycles.mjs src [more folders]     # exit 1 and one line per circle
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

function sources(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'build') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) sources(p, out);
    else if (/\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(resolve(p));
  }
  return out;
}

/** The file a relative specifier names: './a.js' is ./a.ts in the sources (NodeNext spelling). */
function target(from, spec, files) {
  const base = resolve(dirname(from), spec);
  for (const c of [base.replace(/\.(m?)js$/, '.$1ts'), base, `${base}.ts`, join(base, 'index.ts')])
    if (files.has(c)) return c;
  return null;
}

/** The relative imports of one file: static imports, re-exports and import(). */
function relativeImports(file) {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specs = [];
  const visit = (node) => {
    if (ts.isImportDeclaration(node)) specs.push(node.moduleSpecifier.text);
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier) specs.push(node.moduleSpecifier.text);
    else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      ts.isStringLiteral(node.arguments[0] ?? {})
    )
      specs.push(node.arguments[0].text);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return specs.filter((s) => s.startsWith('.'));
}

/** Every elementary circle found by a depth-first walk (each reported once, from its smallest file). */
function circles(graph) {
  const found = new Map();
  const state = new Map(); // 1: on the stack, 2: done
  const stack = [];
  const walk = (n) => {
    state.set(n, 1);
    stack.push(n);
    for (const m of graph.get(n) ?? []) {
      if (state.get(m) === 1) {
        const loop = stack.slice(stack.indexOf(m));
        const start = loop.indexOf([...loop].sort()[0]);
        const key = [...loop.slice(start), ...loop.slice(0, start)];
        found.set(key.join('\0'), key);
      } else if (!state.has(m)) walk(m);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const n of [...graph.keys()].sort()) if (!state.has(n)) walk(n);
  return [...found.values()];
}

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  console.error('usage: import-cycles.mjs DIR...');
  process.exit(2);
}
const files = new Set(dirs.flatMap((d) => sources(d)));
const graph = new Map(
  [...files].map((f) => [
    f,
    relativeImports(f)
      .map((s) => target(f, s, files))
      .filter(Boolean),
  ]),
);
const found = circles(graph);
const name = (f) => relative(process.cwd(), f);
for (const c of found) console.error(`import circle: ${[...c, c[0]].map(name).join(' -> ')}`);
if (found.length > 0) {
  console.error(
    `${found.length} import circle(s): move the shared types into a module of their own and import them with \`import type\``,
  );
  process.exit(1);
}

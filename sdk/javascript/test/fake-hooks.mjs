// Module resolution hooks: every `toolhost:` import is fake-imports.mjs.
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('toolhost:')) {
    return { url: new URL('./fake-imports.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}

// RegExp.prototype[Symbol.split] for plain RegExps, installed in every
// realm js_runtime makes. QuickJS follows the spec to the letter: a sticky
// `exec` at every position of the string, so `text.split(/\s+/)` on 5 MB
// is 5 million calls; one global search per match finds the same matches
// (a sticky match fails at every position before the next match a global
// search finds from there). Anything else (a subclass, an own `exec`,
// unicode, the empty string) goes to the built-in. `/\s+/`, the commonest
// way to cut text into words, is cut by `splitSpaces` (native, given by
// js_runtime) at each run of the characters QuickJS's `\s` matches, which
// gives the same pieces without a match object per word.
((splitSpaces) => {
  // Everything it uses is taken now: a script that replaces a global or a
  // prototype's method does not change what split does.
  const uncurry = Function.prototype.call.bind(Function.prototype.bind, Function.prototype.call);
  const builtinSplit = RegExp.prototype[Symbol.split];
  const builtinExec = RegExp.prototype.exec;
  const splitBuiltIn = uncurry(builtinSplit);
  const exec = uncurry(builtinExec);
  const push = uncurry(Array.prototype.push);
  const slice = uncurry(String.prototype.slice);
  const getPrototypeOf = Object.getPrototypeOf;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const RegExpCtor = RegExp;
  const regExpPrototype = RegExp.prototype;
  const speciesGetter = getOwnPropertyDescriptor(RegExp, Symbol.species).get;
  const source = uncurry(getOwnPropertyDescriptor(RegExp.prototype, 'source').get);
  const speciesSymbol = Symbol.species;
  const MAX = 2 ** 32 - 1;
  const split = {
    [Symbol.split](string, limit) {
      const rx = this;
      const species = getOwnPropertyDescriptor(RegExpCtor, speciesSymbol);
      if (typeof rx !== 'object' || rx === null || getPrototypeOf(rx) !== regExpPrototype
          || rx.constructor !== RegExpCtor || !species || species.get !== speciesGetter
          || rx.exec !== builtinExec) {
        return splitBuiltIn(rx, string, limit);
      }
      const S = `${string}`;
      const flags = `${rx.flags}`;
      // The flags of a global search: the same but `g` and `y`, and `g`.
      let searchFlags = 'g';
      for (let i = 0; i < flags.length; i++) {
        const flag = flags[i];
        if (flag === 'u' || flag === 'v') return splitBuiltIn(rx, S, limit);
        if (flag !== 'g' && flag !== 'y') searchFlags += flag;
      }
      if (S.length === 0) return splitBuiltIn(rx, S, limit);
      const lim = limit === undefined ? MAX : limit >>> 0;
      const A = [];
      if (lim === 0) return A;
      if (source(rx) === '\\s+') {
        // Undefined for a string UTF-8 cannot hold (a lone surrogate).
        const words = splitSpaces(S, lim);
        if (words !== undefined) return words;
      }
      const searcher = new RegExpCtor(rx, searchFlags);
      const size = S.length;
      let p = 0;
      let q = 0;
      while (q < size) {
        searcher.lastIndex = q;
        const z = exec(searcher, S);
        if (z === null || z.index >= size) break;
        q = z.index;
        const end = searcher.lastIndex;
        const e = end < size ? end : size;
        if (e === p) {
          q += 1;
          continue;
        }
        push(A, slice(S, p, q));
        if (A.length === lim) return A;
        p = e;
        for (let i = 1; i < z.length; i++) {
          push(A, z[i]);
          if (A.length === lim) return A;
        }
        q = p;
      }
      push(A, slice(S, p));
      return A;
    },
  }[Symbol.split];
  Object.defineProperty(RegExp.prototype, Symbol.split, {
    value: split, writable: true, enumerable: false, configurable: true,
  });
})

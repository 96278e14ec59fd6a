// RegExp.prototype[Symbol.split] for plain RegExps, installed in every
// realm js_runtime makes. QuickJS follows the spec to the letter: a sticky
// `exec` at every position of the string, so `text.split(/\s+/)` on 5 MB
// is 5 million calls; one global search per match finds the same matches
// (a sticky match fails at every position before the next match a global
// search finds from there). Anything else (a subclass, an own `exec`,
// unicode, the empty string) goes to the built-in.
(() => {
  const builtinSplit = RegExp.prototype[Symbol.split];
  const builtinExec = RegExp.prototype.exec;
  const MAX = 2 ** 32 - 1;
  const split = {
    [Symbol.split](string, limit) {
      const rx = this;
      if (typeof rx !== 'object' || rx === null || Object.getPrototypeOf(rx) !== RegExp.prototype
          || rx.constructor !== RegExp || rx.exec !== builtinExec) {
        return builtinSplit.call(rx, string, limit);
      }
      const S = String(string);
      const flags = String(rx.flags);
      if (S.length === 0 || flags.includes('u') || flags.includes('v')) {
        return builtinSplit.call(rx, S, limit);
      }
      const lim = limit === undefined ? MAX : limit >>> 0;
      const A = [];
      if (lim === 0) return A;
      const searcher = new RegExp(rx, flags.replace('y', '') + 'g');
      const size = S.length;
      let p = 0;
      let q = 0;
      while (q < size) {
        searcher.lastIndex = q;
        const z = builtinExec.call(searcher, S);
        if (z === null || z.index >= size) break;
        q = z.index;
        const e = Math.min(searcher.lastIndex, size);
        if (e === p) {
          q += 1;
          continue;
        }
        A.push(S.slice(p, q));
        if (A.length === lim) return A;
        p = e;
        for (let i = 1; i < z.length; i++) {
          A.push(z[i]);
          if (A.length === lim) return A;
        }
        q = p;
      }
      A.push(S.slice(p));
      return A;
    },
  }[Symbol.split];
  Object.defineProperty(RegExp.prototype, Symbol.split, {
    value: split, writable: true, enumerable: false, configurable: true,
  });
})();

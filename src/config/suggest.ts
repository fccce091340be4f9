function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/** The nearest known name, if near enough to be a typo; a bare field name also matches its namespaced flag. */
function suggest(name: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 5)) + 1;
  for (const candidate of known) {
    const tail = candidate.slice(candidate.indexOf('.') + 1);
    const d = Math.min(distance(name, candidate), name.includes('.') ? Infinity : distance(name, tail));
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** ` (did you mean <prefix><name>?)` for the nearest known name, or nothing when none is near. */
export const didYouMean = (name: string, known: string[], prefix = ''): string => {
  const s = suggest(name, known);
  return s ? ` (did you mean ${prefix}${s}?)` : '';
};

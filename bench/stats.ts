/**
 * The statistics the benchmarks print: a ratio of means with a bootstrap interval over paired
 * rounds (so the figure says its own spread), and start offsets spread evenly over a period.
 * Pure; a seeded generator keeps a run's interval reproducible from its data.
 */

export function mean(xs: number[]): number {
    return xs.reduce((a, b) => a + b, 0) / xs.length;
}

export function median(xs: number[]): number {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** The p-quantile (0..1) by linear interpolation between order statistics. */
export function quantile(xs: number[], p: number): number {
    const s = [...xs].sort((a, b) => a - b);
    const at = (s.length - 1) * p;
    const lo = Math.floor(at);
    return lo + 1 < s.length ? s[lo] + (s[lo + 1] - s[lo]) * (at - lo) : s[lo];
}

/** A small seeded generator (mulberry32): uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}

export interface Estimate {
    value: number;
    /** The 95% interval: the 2.5% and 97.5% quantiles of the statistic over resampled rounds. */
    low: number;
    high: number;
}

/**
 * A statistic of paired rounds and its 95% bootstrap interval: rounds drawn with replacement,
 * each round's values kept together, so what a round shares (the machine's load at that
 * moment) stays shared.
 */
export function pairedBootstrap<T>(rounds: T[], statistic: (sample: T[]) => number, resamples = 4000, random = seededRandom(1)): Estimate {
    if (rounds.length === 0) throw new Error("pairedBootstrap: no rounds");
    const values: number[] = [];
    for (let r = 0; r < resamples; r++) values.push(statistic(rounds.map(() => rounds[Math.floor(random() * rounds.length)])));
    return { value: statistic(rounds), low: quantile(values, 0.025), high: quantile(values, 0.975) };
}

/** mean(a) / mean(b), a[i] and b[i] measured in one round, with its 95% interval. */
export function pairedRatio(a: number[], b: number[]): Estimate {
    if (a.length !== b.length || a.length === 0) throw new Error("pairedRatio: needs the same number (> 0) of values on each side");
    return pairedBootstrap(
        a.map((x, i) => [x, b[i]]),
        (sample) => mean(sample.map(([x]) => x)) / mean(sample.map(([, y]) => y)),
    );
}

/** Where a ratio stands against a target: PASS when its whole interval is at or under it. */
export function verdict(estimate: Estimate, target: number): "PASS" | "MISS" | "UNRESOLVED" {
    if (estimate.high <= target) return "PASS";
    if (estimate.low > target) return "MISS";
    return "UNRESOLVED";
}

/**
 * n offsets in [0, period), one in each n-th of the period, in random order: starts spread
 * evenly over a period that the measured thing is quantized by, so the quantization averages
 * out instead of favouring whichever side happens to fall just before a tick.
 */
export function spreadOffsets(n: number, period: number, random: () => number): number[] {
    const slots = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [slots[i], slots[j]] = [slots[j], slots[i]];
    }
    return slots.map((slot) => ((slot + random()) / n) * period);
}

"""Reference values for the statistics in src/domain/{psychometrics,distance,bootstrap,power,reliability}.rs (#16).

The Rust unit tests hard-code the same small datasets as below and pin the values this script
prints, so every statistic is checked against an independent computation (pingouin, scipy,
numpy). Run it with:

    python3 -m venv /tmp/st && /tmp/st/bin/pip install scipy pingouin numpy statsmodels
    /tmp/st/bin/python tools/stats_reference.py

Keep the arrays here and in the Rust tests identical; when one changes, rerun and re-pin.
"""

import numpy as np
import pandas as pd
import pingouin as pg
from scipy import optimize
from scipy.spatial.distance import jensenshannon
from scipy.stats import wasserstein_distance

NAN = np.nan

# --- Cronbach's alpha -------------------------------------------------------------------------
# 10 respondents x 3 items (a common pingouin example).
ALPHA_SMALL = [
    [1, 1, 1], [2, 1, 1], [2, 1, 2], [3, 2, 1], [2, 3, 2],
    [2, 3, 3], [3, 2, 3], [3, 3, 3], [2, 3, 2], [3, 3, 3],
]
# 12 respondents x 5 items on a 1..5 scale; also used for omega.
ITEMS_12x5 = [
    [3, 5, 4, 3, 4], [2, 2, 3, 2, 1], [4, 3, 3, 4, 3], [5, 4, 5, 5, 4],
    [1, 2, 1, 2, 2], [3, 4, 3, 3, 4], [4, 4, 5, 3, 3], [3, 3, 2, 2, 3],
    [5, 5, 4, 4, 5], [3, 2, 3, 3, 2], [1, 1, 2, 1, 2], [4, 3, 4, 5, 4],
]
# Item 0 of this one is almost the total: its one-factor loading exceeds 1 (a Heywood case),
# so omega is refused.
HEYWOOD = [
    [4, 5, 4, 3, 4], [2, 2, 3, 2, 1], [3, 3, 3, 4, 3], [5, 4, 5, 5, 4],
    [1, 2, 1, 2, 2], [3, 4, 3, 3, 4], [4, 4, 5, 3, 3], [2, 3, 2, 2, 3],
    [5, 5, 4, 4, 5], [3, 2, 3, 3, 2], [1, 1, 2, 1, 2], [4, 3, 4, 5, 4],
]
# The same with missing answers: rows 1, 4 and 9 (0-based) are dropped listwise.
ITEMS_MISSING = [list(r) for r in ITEMS_12x5]
ITEMS_MISSING[1][2] = NAN
ITEMS_MISSING[4][0] = NAN
ITEMS_MISSING[9][4] = NAN


def alpha(rows):
    df = pd.DataFrame(rows, dtype=float)
    return float(pg.cronbach_alpha(data=df, nan_policy="listwise")[0])


# --- McDonald's omega (one factor, iterated principal axis) -----------------------------------
def omega_pa(rows, tol=1e-12, max_iter=10_000):
    """Iterated principal-axis one-factor fit, exactly as the Rust code (start: communalities 1)."""
    x = np.asarray(rows, dtype=float)
    r = np.corrcoef(x, rowvar=False)
    h = np.ones(r.shape[0])
    for _ in range(max_iter):
        rs = r.copy()
        np.fill_diagonal(rs, h)
        w, v = np.linalg.eigh(rs)
        lam = np.sqrt(w[-1]) * v[:, -1]
        if lam.sum() < 0:
            lam = -lam
        h_new = lam**2
        done = np.max(np.abs(h_new - h)) < tol
        h = h_new
        if done:
            break
    s = lam.sum()
    return float(s * s / (s * s + np.sum(1 - lam**2))), lam


def omega_minres(rows):
    """Independent check: minimize the off-diagonal residuals (minres/ULS) with scipy."""
    x = np.asarray(rows, dtype=float)
    r = np.corrcoef(x, rowvar=False)
    k = r.shape[0]
    iu = np.triu_indices(k, 1)

    def resid(lam):
        return (r - np.outer(lam, lam))[iu]

    fit = optimize.least_squares(resid, np.full(k, 0.7), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    lam = fit.x if fit.x.sum() >= 0 else -fit.x
    s = lam.sum()
    return float(s * s / (s * s + np.sum(1 - lam**2)))


# --- distances -------------------------------------------------------------------------------
W_U = [1, 2, 2, 3, 4, 5, 5, 5]
W_V = [1, 1, 2, 2, 2, 3, 3, 4, 5]
W_A = [0.5, 3.25, -1.0]
W_B = [2.0]
JS_P = [3, 0, 5, 2, 0]
JS_Q = [1, 4, 4, 0, 1]
JS_R = [10, 20, 30]
JS_S = [0.2, 0.5, 0.3]

# --- bootstrap -------------------------------------------------------------------------------
BOOT = [
    3.1, 2.4, 4.0, 3.6, 2.9, 3.3, 4.4, 2.2, 3.0, 3.8,
    3.5, 2.7, 3.9, 3.2, 2.6, 4.1, 3.4, 2.8, 3.7, 3.0,
]


def boot_mean_ci(x, b=20_000, seed=16):
    x = np.asarray(x)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(b, len(x)))
    means = x[idx].mean(axis=1)
    return np.percentile(means, [2.5, 97.5])  # linear interpolation, as the Rust code


# --- answer distributions from token logprobs (#17) ------------------------------------------
# The fixtures under tests/fixtures/logprobs/, read against items (Interested, Excited) on 1..5.
# The answer tokens are picked here by reading each reply by hand (the Rust code finds them by
# asking the parser), then: exp of every distinct alternative that spells an allowed value,
# renormalised over the allowed values; the expected value is sum(value * p).
LOGPROB_FIXTURES = {
    "llamacpp_smollm2.json": [6, 13],  # "1. Interested: 3\n2. Excited: 3": the two "3" tokens
    "openai_reference_shape.json": [5, 12],  # "1. Interested: 4\n2. Excited: 2"
}


def logprob_distributions(values=(1, 2, 3, 4, 5)):
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "logprobs"
    out = {}
    for name, positions in LOGPROB_FIXTURES.items():
        content = json.loads((root / name).read_text())["choices"][0]["logprobs"]["content"]
        items = []
        for i in positions:
            t = content[i]
            alts = {a["token"]: a["logprob"] for a in t["top_logprobs"]}
            alts.setdefault(t["token"], t["logprob"])
            mass = np.zeros(len(values))
            for tok, lp in alts.items():
                if tok.strip() in [str(v) for v in values]:
                    mass[values.index(int(tok.strip()))] += np.exp(lp)
            p = mass / mass.sum()
            items.append((p.tolist(), float(np.dot(values, p))))
        out[name] = items
    return out
# --- alignment (domain::alignment) ------------------------------------------------------------
# Three factors of one emotion, one category; four humans per factor (before, after) and one
# model (default trials; one situation per factor). Same arrays as the Rust test.
AL_BEFORE = [[10, 11, 12, 13], [10, 12, 11, 13], [12, 12, 13, 11]]
AL_AFTER = [[14, 14, 16, 17], [10, 12, 12, 13], [9, 10, 10, 8]]
AL_DEFAULT = [12, 13, 11, 12]
AL_EVOKED = [[15, 17, 14, 16], [12, 13, 12, 11], [13, 14, 12, 13]]
AL_ALPHA = 0.05
AL_BINS = 5  # no answer scale given: five bins over the observed range


def alignment_reference():
    from scipy import stats as st

    def direction(p, t):
        return 0 if not p <= AL_ALPHA else (1 if t > 0 else -1)

    hd, md, he, me, dirs, w1, js = [], [], [], [], [], [], []
    lo = min(min(min(a) for a in AL_AFTER), min(min(e) for e in AL_EVOKED))
    hi = max(max(max(a) for a in AL_AFTER), max(max(e) for e in AL_EVOKED))

    def hist(x):
        b = np.minimum(np.floor((np.asarray(x, float) - lo) / (hi - lo) * AL_BINS), AL_BINS - 1)
        return np.bincount(b.astype(int), minlength=AL_BINS)

    for b, a, e in zip(AL_BEFORE, AL_AFTER, AL_EVOKED):
        tr = st.ttest_rel(a, b)
        tw = st.ttest_ind(e, AL_DEFAULT, equal_var=False)
        dirs.append((direction(tr.pvalue, tr.statistic), direction(tw.pvalue, tw.statistic)))
        hd.append(np.mean(np.subtract(a, b)))
        md.append(np.mean(e) - np.mean(AL_DEFAULT))
        he.append(np.mean(a))
        me.append(np.mean(e))
        w1.append(wasserstein_distance(a, e))
        js.append(jensenshannon(hist(a), hist(e), base=2))
    sig = [(h, m) for h, m in dirs if h != 0 or m != 0]
    print(f"alignment directions (human, model) = {dirs!r}")
    print(f"alignment direction agreement = {sum(h == m for h, m in sig)}/{len(sig)}")
    print(f"alignment delta r   = {float(np.corrcoef(hd, md)[0, 1])!r}")
    print(f"alignment evoked MAE = {float(np.mean(np.abs(np.subtract(me, he))))!r}")
    gap = np.mean(AL_DEFAULT) - np.mean(np.concatenate(AL_BEFORE))
    print(f"alignment default gap = {float(gap)!r}")
    print(f"alignment W1 mean   = {float(np.mean(w1))!r}  per factor {[float(x) for x in w1]!r}")
    print(f"alignment JS mean   = {float(np.mean(js))!r}  per factor {[float(x) for x in js]!r}")
    # Percentile bootstrap of the evoked MAE and W1 of factor 0 alone: humans resampled
    # within the factor, the model's trials within their situation (numpy's stream, B = 20 000).
    rng = np.random.default_rng(16)
    a = np.asarray(AL_AFTER[0], float)
    e = np.asarray(AL_EVOKED[0], float)
    maes, ws = [], []
    for _ in range(20_000):
        ra = a[rng.integers(0, len(a), len(a))]
        re = e[rng.integers(0, len(e), len(e))]
        maes.append(abs(re.mean() - ra.mean()))
        ws.append(wasserstein_distance(ra, re))
    print(f"alignment MAE CI factor 0 = {np.percentile(maes, [2.5, 97.5]).tolist()!r}")
    print(f"alignment W1 CI factor 0  = {np.percentile(ws, [2.5, 97.5]).tolist()!r}")


def main():
    print(f"alpha small       = {alpha(ALPHA_SMALL)!r}")
    print(f"alpha 12x5        = {alpha(ITEMS_12x5)!r}")
    print(f"alpha missing     = {alpha(ITEMS_MISSING)!r}")
    om, lam = omega_pa(ITEMS_12x5)
    print(f"omega 12x5 (PA)   = {om!r}")
    print(f"  loadings        = {lam.tolist()!r}")
    print(f"omega 12x5 minres = {omega_minres(ITEMS_12x5)!r}  (scipy least_squares cross-check)")
    om_s, _ = omega_pa(ALPHA_SMALL)
    print(f"omega small (PA)  = {om_s!r}  minres {omega_minres(ALPHA_SMALL)!r}")
    print(f"HEYWOOD max loading = {float(omega_pa(HEYWOOD)[1].max())!r}  (> 1: refused)")
    print(f"W1(U, V)          = {float(wasserstein_distance(W_U, W_V))!r}")
    print(f"W1(A, B)          = {float(wasserstein_distance(W_A, W_B))!r}")
    print(f"JS(P, Q) base 2   = {float(jensenshannon(JS_P, JS_Q, base=2))!r}")
    print(f"JS(R, S) base 2   = {float(jensenshannon(JS_R, JS_S, base=2))!r}")
    print(f"JS(P, P) base 2   = {float(jensenshannon(JS_P, JS_P, base=2))!r}")
    print(f"bootstrap mean CI = {boot_mean_ci(BOOT).tolist()!r}  (numpy, B=20000, seed 16)")
    print(f"mean(BOOT)        = {float(np.mean(BOOT))!r}")
    power_reference()
    retest_reference()
    published_reference()
    for name, items in logprob_distributions().items():
        for k, (p, ev) in enumerate(items):
            print(f"{name} item {k + 1}: p = {p!r}, expected = {ev!r}")
    alignment_reference()


def retest_reference():
    """src/domain/reliability.rs: ICC(1) (one-way random, single measure) by pingouin."""
    # Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges; their ICC(1,1) = .17.
    table = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    long = pd.DataFrame(
        [(t, j, x) for t, row in enumerate(table) for j, x in enumerate(row)],
        columns=["target", "rater", "score"],
    )
    icc = pg.intraclass_corr(long, targets="target", raters="rater", ratings="score")
    icc = icc.set_index("Type")
    print(f"ICC(1,1) Shrout-Fleiss = {float(icc.loc['ICC(1,1)', 'ICC'])!r}  (pingouin)")
    print(f"  CI95 = {icc1_ci95(table)!r}  (pingouin rounds it: {icc.loc['ICC(1,1)', 'CI95']})")


def icc1_ci95(table):
    """pingouin's ICC1 CI95 formula unrounded: F bounds from scipy.stats.f.ppf."""
    from scipy import stats
    t = np.asarray(table, dtype=float)
    n, k = t.shape
    m = t.mean(axis=1)
    msb = k * ((m - t.mean()) ** 2).sum() / (n - 1)
    msw = ((t - m[:, None]) ** 2).sum() / (n * (k - 1))
    f = msb / msw
    fl = f / stats.f.ppf(0.975, n - 1, n * (k - 1))
    fu = f * stats.f.ppf(0.975, n * (k - 1), n - 1)
    return [float((fl - 1) / (fl + k - 1)), float((fu - 1) / (fu + k - 1))]


def published_reference(data="../shared/emotionbench"):
    """The report's psychometrics on the published data (tests/api/psychometrics.rs): α
    (pingouin), ω (omega_pa above) of the humans' PANAS categories before and after, from
    derived/human_responses.csv; ICC(1) (pingouin) of gpt-4's category sums over the 176
    prompts (General + 175 situations) x their first 10 repeats, from the released results."""
    import os
    if not os.path.isdir(data):
        print(f"published data not found at {data}: skipped")
        return
    pa = [1, 3, 5, 9, 10, 12, 14, 16, 17, 19]
    na = [2, 4, 6, 7, 8, 11, 13, 15, 18, 20]
    humans = pd.read_csv(f"{data}/derived/human_responses.csv")
    for phase in ["before", "after"]:
        for name, items in [("PA", pa), ("NA", na)]:
            cols = [c for c in humans.columns if c.startswith(f"{phase}_")
                    and int(c.split("_")[1]) in items]
            rows = humans[cols].astype(float).values.tolist()
            print(f"humans {phase} {name}: alpha = {alpha(rows)!r}  omega = {omega_pa(rows)[0]!r}")
    gpt4 = pd.read_csv(f"{data}/results/PANAS Test/gpt-4-PANAS-testing.csv")
    answers = gpt4.iloc[1:21].drop(columns=["question-0", "order-0"]).astype(int)
    prompts = {}
    for col in answers.columns:
        prompt, repeat = col.rsplit("_test-", 1)
        prompts.setdefault(prompt, []).append((int(repeat.split("_")[0]), col))
    for name, items in [("PA", pa), ("NA", na)]:
        long = []
        for prompt, trials in prompts.items():
            for repeat, col in sorted(trials)[:10]:
                long.append((prompt, repeat, int(answers[col].iloc[[i - 1 for i in items]].sum())))
        df = pd.DataFrame(long, columns=["prompt", "repeat", "score"])
        icc = pg.intraclass_corr(df, targets="prompt", raters="repeat", ratings="score")
        icc1 = float(icc.set_index("Type").loc["ICC(1,1)", "ICC"])
        print(f"gpt-4 {name}: ICC(1) = {icc1!r} over {len(prompts)} prompts x 10 repeats")
        wide = df.pivot(index="prompt", columns="repeat", values="score").values
        print(f"  CI95 = {icc1_ci95(wide)!r}")


def power_reference():
    """src/domain/power.rs: Φ, the t quantile, the noncentral t and the two-sample plan."""
    from statsmodels.stats.power import TTestIndPower
    from scipy import stats
    print("# power.rs (scipy.stats.norm / t / nct; statsmodels TTestIndPower)")
    for x in [0.0, 1.96, -1.0, -8.0]:
        print(f"norm.cdf({x}) = {float(stats.norm.cdf(x))!r}")
    for a, df in [(0.05, 10), (0.01, 126), (0.05, 2)]:
        print(f"t.isf({a}/2, {df}) = {float(stats.t.isf(a/2, df))!r}")
    for t, df, nc in [(1.5, 10, 2.0), (-1.0, 5, 1.0), (2.0, 30, 3.0), (0.0, 7, -0.5), (-2.5, 200, -1.0)]:
        print(f"nct.cdf({t}, {df}, {nc}) = {float(stats.nct.cdf(t, df, nc))!r}")
    pw = TTestIndPower()
    for d, n, a in [(0.5, 64, 0.05), (0.8, 20, 0.01), (1.0, 2, 0.05)]:
        print(f"power(d={d}, n={n}, alpha={a}) = {float(pw.power(d, n, a))!r}")
    for d, a, p in [(0.5, 0.05, 0.8), (0.2, 0.05, 0.8), (0.8, 0.01, 0.9), (1.5, 0.05, 0.95), (2.5, 0.05, 0.8), (-0.5, 0.05, 0.8)]:
        n = float(pw.solve_power(d, alpha=a, power=p))
        print(f"solve_power(d={d}, alpha={a}, power={p}) = {n!r} -> {int(np.ceil(n))}")


def published_factor_row():
    """The first row of the report's humans factor table (tests/api/report.rs,
    the_factor_table_gives_every_factor_its_statistics_in_markdown_html_and_json): Anger,
    factor 0 ("Facing Self-Opinioned People"), PANAS Positive Affect as the sum of items
    1 3 5 9 10 12 14 16 17 19, paired t-test of after vs before (scipy.stats.ttest_rel)."""
    from pathlib import Path

    from scipy import stats

    path = Path(__file__).resolve().parents[2] / "shared/emotionbench/derived/human_responses.csv"
    if not path.exists():
        print(f"factor row: {path} missing, skipped")
        return
    d = pd.read_csv(path)
    pa = {1, 3, 5, 9, 10, 12, 14, 16, 17, 19}
    g = d[(d.emotion == "Anger") & (d.factor_index == 0)]
    cols = lambda phase: [c for c in d.columns if c.startswith(phase) and int(c.split("_")[1]) in pa]
    before, after = g[cols("before_")].sum(axis=1), g[cols("after_")].sum(axis=1)
    r = stats.ttest_rel(after, before)
    print(
        f"factor row Anger/0 PA: n = {len(g)}, default {before.mean():.1f} ± {before.std():.1f}, "
        f"evoked {after.mean():.1f} ± {after.std():.1f}, t = {r.statistic:.2f}, df = {r.df}, "
        f"p = {r.pvalue:.3f}"
    )


def valence_control():
    """src/domain/valence.rs (#18): the paired test of Δ(original) − Δ(variant) over three
    situations, its 95 % t interval and d_z."""
    from scipy import stats

    original, variant = np.array([6.0, 4.0, 9.0]), np.array([0.0, 1.0, 0.5])
    r = stats.ttest_rel(original, variant)
    ci = r.confidence_interval(0.95)
    d = original - variant
    print(
        f"valence control: t = {r.statistic!r}, p = {r.pvalue!r}, ci = ({ci.low!r}, "
        f"{ci.high!r}), d_z = {d.mean() / d.std(ddof=1)!r}"
    )


if __name__ == "__main__":
    main()
    published_factor_row()
    valence_control()

//! Message kernels: O(k) noisy-OR factor messages (linear and log domain) and helpers on
//! log-odds. All messages are log-odds `ℓ = ln(m(incorrect) / m(correct))`.

use super::InferError;

/// Finite log-odds sent by variables are kept finite (clipped to `±CLIP`, far beyond anything
/// evidence can produce); only evidence produces `±∞`. They are *not* clipped to what a
/// probability can hold: a statement that 100,000 passing values vouch for has log-odds about
/// -16,000, and a failure that only such statements can explain must still be explained by the
/// least vouched-for one (the log kernel keeps those magnitudes exactly).
pub(crate) const CLIP: f64 = 1e300;

/// The linear kernel is used only where its products stay far from underflow: every incoming
/// log-odds within `±LIN_MAX` (probabilities above ~5e-131), and the product of the `c_u` above
/// `TINY`; elsewhere the log kernel, which is exact for any magnitude.
const LIN_MAX: f64 = 300.0;
const TINY: f64 = 1e-150;

/// Logistic function `1 / (1 + e^{-l})`, exact at `±∞`.
#[inline]
pub fn sigmoid(l: f64) -> f64 {
    if l >= 0.0 {
        1.0 / (1.0 + (-l).exp())
    } else {
        let e = l.exp();
        e / (1.0 + e)
    }
}

/// `(σ(-l), σ(l))` = normalised (correct, incorrect) masses of a log-odds message, with one exp.
#[inline]
pub(crate) fn sig_pair(l: f64) -> (f64, f64) {
    // Certain messages (evidence) are common: skip the exp (same result, exp(-∞) = 0).
    if l == f64::INFINITY {
        return (0.0, 1.0);
    }
    if l == f64::NEG_INFINITY {
        return (1.0, 0.0);
    }
    let e = (-l.abs()).exp();
    let r = 1.0 / (1.0 + e);
    if l >= 0.0 {
        (e * r, r)
    } else {
        (r, e * r)
    }
}

/// `ln(1 + e^x)`, stable, exact at `±∞`.
#[inline]
pub(crate) fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + ln_1p_exp(-x)
    } else {
        ln_1p_exp(x)
    }
}

/// Below this `e^d` is 0 in `f64` (it underflows below -745.13), so `ln(1 + e^d)` is 0.
const EXP_UNDERFLOW: f64 = -746.0;
/// Below this `ln(1 + y) = y` for `y = e^d` to within half an ulp (`y / 2 < 2^-54`).
const LN_1P_LINEAR: f64 = -40.0;

/// `ln(1 + e^d)` for `d ≤ 0` (and `-∞`). The log kernel's messages are mostly far below 0
/// (statements vouched for by thousands of passing values, observed parents at `-∞`): there
/// it skips `ln_1p`, or both calls and libm's slow underflow path, with the same result.
#[inline]
fn ln_1p_exp(d: f64) -> f64 {
    if d < EXP_UNDERFLOW {
        0.0
    } else if d < LN_1P_LINEAR {
        d.exp()
    } else {
        d.exp().ln_1p()
    }
}

/// `ln σ(l)`, the log-probability of a log-odds `l`, stable for any `l` (finite for finite `l`
/// where `σ(l)` itself underflows).
#[inline]
pub fn ln_sigmoid(l: f64) -> f64 {
    -softplus(-l)
}

/// `ln(e^a + e^b)` with `-∞` handled.
#[inline]
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if hi == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    hi + ln_1p_exp(lo - hi)
}

/// Clips finite log-odds to `±CLIP`; keeps `±∞` and NaN.
#[inline]
pub(crate) fn clip(l: f64) -> f64 {
    if l.is_finite() {
        l.clamp(-CLIP, CLIP)
    } else {
        l
    }
}

/// Per-factor parameters shared by all noisy-OR factors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FactorKernel {
    p: f64,
    q: f64,
    ln_p: f64,
    ln_q: f64,
    log_domain: bool,
    /// Message `f_v → v` of a root: `ln((1 - prior) / prior)`.
    pub(crate) root_pi: f64,
}

/// Scratch buffers reused across factor updates.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) a: Vec<f64>,
    pub(crate) b: Vec<f64>,
    pub(crate) c: Vec<f64>,
    pub(crate) d: Vec<f64>,
}

impl FactorKernel {
    pub(crate) fn new(p: f64, prior: f64, log_domain: bool) -> FactorKernel {
        FactorKernel {
            p,
            q: 1.0 - p,
            ln_p: p.ln(),
            ln_q: (1.0 - p).ln(),
            log_domain,
            root_pi: (1.0 - prior).ln() - prior.ln(),
        }
    }

    /// `(C, D)` of the linear kernel over the parents' messages: `C = Π_u c_u` with
    /// `c_u = (1 - b_u) + p·b_u` (`b_u = σ(l_u)`), and `D = Σ_u (Π_{u' < u} c_u') · q·b_u`, so that
    /// `D / C` is the odds of the factor message `f_v → v`.
    #[inline]
    fn c_d(&self, parents: &[f64]) -> (f64, f64) {
        let (mut c_all, mut d_all) = (1.0f64, 0.0f64);
        for &l in parents {
            let (a, b) = sig_pair(l);
            d_all += c_all * (self.q * b);
            c_all *= a + self.p * b;
        }
        (c_all, d_all)
    }

    /// Whether the linear kernel is accurate for these messages (see [`LIN_MAX`]).
    #[inline]
    fn linear_ok(&self, parents: &[f64]) -> bool {
        !self.log_domain
            && parents
                .iter()
                .all(|&l| l.is_infinite() || l.abs() <= LIN_MAX)
    }

    /// `(ln c_u, ln d_u)` of a parent message `l`: `c_u = (1 - b) + p·b`, `d_u = q·b`, `b = σ(l)`,
    /// for any `l` (`±∞` included).
    #[inline]
    fn ln_c_d(&self, l: f64) -> (f64, f64) {
        // Observed parents (certain messages): the values of the general formula, without it.
        if l == f64::NEG_INFINITY {
            return (0.0, f64::NEG_INFINITY);
        }
        if l == f64::INFINITY {
            return (self.ln_p, self.ln_q);
        }
        let (ln_a, ln_b) = (ln_sigmoid(-l), ln_sigmoid(l));
        (log_add_exp(ln_a, self.ln_p + ln_b), self.ln_q + ln_b)
    }

    /// Message `f_v → v` (log-odds) given the parents' messages `π_{u→v}` (log-odds).
    /// A factor without parents is a root and sends the prior.
    pub(crate) fn pi_out(&self, parents: &[f64]) -> f64 {
        self.pi_out_r(parents, false).0
    }

    /// [`Self::pi_out`]; with `ratio`, the linear kernel returns the odds `m(1) / m(0)` instead
    /// of their logarithm (for damping in probability space without a round trip through `ln`
    /// and `exp`). The flag returned tells which of the two the value is.
    pub(crate) fn pi_out_r(&self, parents: &[f64], ratio: bool) -> (f64, bool) {
        if parents.is_empty() {
            return (self.root_pi, false);
        }
        if self.linear_ok(parents) {
            let (c_all, d_all) = self.c_d(parents);
            if c_all >= TINY {
                let r = d_all / c_all;
                return if ratio { (r, true) } else { (r.ln(), false) };
            }
        }
        // Log kernel: ln C = Σ ln c_u, ln D = ln Σ_u (Π_{u' < u} c_u') d_u (a sum of positive
        // terms, so D = 1 - C keeps its precision however small it is).
        let (mut ln_c, mut ln_d) = (0.0f64, f64::NEG_INFINITY);
        for &l in parents {
            let (lc, ld) = self.ln_c_d(l);
            ln_d = log_add_exp(ln_d, ln_c + ld);
            ln_c += lc;
        }
        (ln_d - ln_c, false)
    }

    /// [`Self::pi_out`] where it is `±∞` or NaN (a certain or impossible factor message); some
    /// finite stand-in (0) where it is finite, found without a logarithm. For contradiction
    /// checks, which only ask whether the message is certain.
    pub(crate) fn pi_out_if_certain(&self, parents: &[f64]) -> f64 {
        if parents.is_empty() {
            return self.root_pi;
        }
        let (c_all, d_all) = self.c_d(parents);
        // ln(D / C) is finite when D > 0 and C is safely positive; otherwise decide exactly.
        if c_all >= TINY && d_all > 0.0 && d_all.is_finite() {
            0.0
        } else {
            self.pi_out(parents)
        }
    }

    /// Messages `f_v → u` for every parent (written to `out`, same order as `parents`), given
    /// the parents' messages and the child's message `λ_v` (all log-odds).
    pub(crate) fn lam_out(&self, parents: &[f64], child: f64, out: &mut [f64], s: &mut Scratch) {
        self.lam_out_r(parents, child, out, s, false);
    }

    /// [`Self::lam_out`]; with `ratio`, the linear kernel writes the odds `m(1) / m(0)` instead
    /// of their logarithms and returns true (see [`Self::pi_out_r`]).
    pub(crate) fn lam_out_r(
        &self,
        parents: &[f64],
        child: f64,
        out: &mut [f64],
        s: &mut Scratch,
        ratio: bool,
    ) -> bool {
        let k = parents.len();
        debug_assert_eq!(out.len(), k);
        if k == 0 {
            return false;
        }
        let (alpha, beta) = sig_pair(child);
        if self.linear_ok(parents) && (child.is_infinite() || child.abs() <= LIN_MAX) {
            // prefix products P_i = Π_{j<i} c_j and complements Dp_i = 1 - P_i.
            s.a.clear();
            s.b.clear();
            s.c.clear();
            s.d.clear();
            let (mut pc, mut pd) = (1.0f64, 0.0f64);
            for &l in parents {
                s.a.push(pc);
                s.b.push(pd);
                let (a, b) = sig_pair(l);
                let c = a + self.p * b;
                s.c.push(c);
                s.d.push(self.q * b);
                pd += pc * (self.q * b);
                pc *= c;
            }
            if pc >= TINY {
                if beta == 0.0 {
                    // Child certainly correct: λ(0) = C_{¬u}, λ(1) = p·C_{¬u} with C_{¬u} ≥ C > 0,
                    // so every message is ln p (the common case of an observed-correct child).
                    out.fill(if ratio { self.p } else { self.ln_p });
                    return ratio;
                }
                let (mut sc, mut sd) = (1.0f64, 0.0f64); // suffix S_{i+1}, Ds_{i+1}
                for i in (0..k).rev() {
                    let c_loo = s.a[i] * sc;
                    let d_loo = s.b[i] + s.a[i] * sd;
                    let mu0 = beta * d_loo + alpha * c_loo;
                    let mu1 = beta * (d_loo + self.q * c_loo) + alpha * self.p * c_loo;
                    out[i] = if ratio { mu1 / mu0 } else { (mu1 / mu0).ln() };
                    sd += sc * s.d[i];
                    sc *= s.c[i];
                }
                return ratio;
            }
        }
        // Log kernel, exact for any magnitude: prefix ln P_i, ln Dp_i; suffix ln S_{i+1},
        // ln Ds_{i+1} (Ds_i = d_i + c_i·Ds_{i+1}); C_{¬i} = P_i·S_{i+1}, D_{¬i} = Dp_i + P_i·Ds_{i+1}.
        let (ln_alpha, ln_beta) = (ln_sigmoid(-child), ln_sigmoid(child));
        s.a.clear();
        s.b.clear();
        s.c.clear();
        s.d.clear();
        let (mut ln_pc, mut ln_pd) = (0.0f64, f64::NEG_INFINITY);
        for &l in parents {
            s.a.push(ln_pc);
            s.b.push(ln_pd);
            let (lc, ld) = self.ln_c_d(l);
            s.c.push(lc);
            s.d.push(ld);
            ln_pd = log_add_exp(ln_pd, ln_pc + ld);
            ln_pc += lc;
        }
        let (mut ln_sc, mut ln_sd) = (0.0f64, f64::NEG_INFINITY);
        for i in (0..k).rev() {
            let ln_c_loo = s.a[i] + ln_sc;
            let ln_d_loo = log_add_exp(s.b[i], s.a[i] + ln_sd);
            let lm0 = log_add_exp(ln_beta + ln_d_loo, ln_alpha + ln_c_loo);
            let lm1 = log_add_exp(
                ln_beta + log_add_exp(ln_d_loo, self.ln_q + ln_c_loo),
                ln_alpha + self.ln_p + ln_c_loo,
            );
            out[i] = lm1 - lm0;
            ln_sd = log_add_exp(s.d[i], s.c[i] + ln_sd);
            ln_sc += s.c[i];
        }
        false
    }
}

/// The O(k) noisy-OR factor messages of one factor `f_v = P(x_v | parents)` with the given CPD
/// parameter `p` (and root prior `prior` when there are no parents): returns
/// `(message to v, messages to each parent)`, all as log-odds of *incorrect*, given the incoming
/// messages `parents[i] = π_{u_i→v}` and `child = λ_v` (log-odds; `±∞` allowed).
/// Exposed for testing and for callers that want to inspect single factors.
pub fn noisy_or_factor_messages(
    p: f64,
    prior: f64,
    parents: &[f64],
    child: f64,
    log_domain: bool,
) -> (f64, Vec<f64>) {
    let kern = FactorKernel::new(p, prior, log_domain);
    let mut out = vec![0.0; parents.len()];
    let mut s = Scratch::default();
    kern.lam_out(parents, child, &mut out, &mut s);
    (kern.pi_out(parents), out)
}

/// Reference implementation of [`noisy_or_factor_messages`] by enumerating the full `2^k` CPD
/// table (k ≤ 24). Messages are computed in linear space from normalised incoming messages.
#[allow(clippy::needless_range_loop)]
pub fn noisy_or_factor_messages_brute_force(
    p: f64,
    prior: f64,
    parents: &[f64],
    child: f64,
) -> Result<(f64, Vec<f64>), InferError> {
    let k = parents.len();
    if k > 24 {
        return Err(InferError::TooLarge {
            unobserved: k,
            limit: 24,
        });
    }
    if k == 0 {
        return Ok(((1.0 - prior).ln() - prior.ln(), Vec::new()));
    }
    let b: Vec<f64> = parents.iter().map(|&l| sigmoid(l)).collect();
    let a: Vec<f64> = parents.iter().map(|&l| sigmoid(-l)).collect();
    let (alpha, beta) = (sigmoid(-child), sigmoid(child));
    let mut to_child = [0.0f64; 2];
    let mut to_par = vec![[0.0f64; 2]; k];
    for cfg in 0u32..(1u32 << k) {
        let w = cfg.count_ones() as i32;
        let f0 = p.powi(w); // P(v correct | cfg)
        let f1 = 1.0 - f0;
        let mut prod_all = 1.0;
        for i in 0..k {
            prod_all *= if cfg >> i & 1 == 1 { b[i] } else { a[i] };
        }
        to_child[0] += f0 * prod_all;
        to_child[1] += f1 * prod_all;
        for i in 0..k {
            let mut prod = 1.0;
            for j in 0..k {
                if j != i {
                    prod *= if cfg >> j & 1 == 1 { b[j] } else { a[j] };
                }
            }
            let xi = (cfg >> i & 1) as usize;
            to_par[i][xi] += (alpha * f0 + beta * f1) * prod;
        }
    }
    Ok((
        (to_child[1] / to_child[0]).ln(),
        to_par.iter().map(|m| (m[1] / m[0]).ln()).collect(),
    ))
}

//! Small dense linear algebra shared by CP (`baselines::cp`) and HT_Rank
//! (`metrics::htrank`).
//!
//! Everything is generic over [`Scalar`], implemented for `f64` and for the
//! exact [`Rational`] type (checked `i128` fractions) so that tests can assert
//! exact rational oracles such as hitting time `4753/512`.
//!
//! The solver is LU with partial pivoting (largest magnitude pivot). A pivot
//! that is exactly zero, or (for `f64`) smaller than `1e-13` times the largest
//! entry of the matrix, makes the system [`LinalgError::Singular`].

use std::fmt;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// Field element usable by the dense solver.
pub trait Scalar:
    Copy
    + Send
    + Sync
    + fmt::Debug
    + PartialEq
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    fn zero() -> Self;
    fn one() -> Self;
    /// Exact conversion where possible. For [`Rational`] every finite `f64`
    /// whose dyadic expansion fits in `i128` converts exactly; others give an
    /// invalid value (see [`Scalar::is_valid`]).
    fn from_f64(x: f64) -> Self;
    fn from_usize(n: usize) -> Self;
    /// Nearest `f64` (used for pivot choice and reporting).
    fn to_f64(self) -> f64;
    /// `false` after an overflow (Rational) or for NaN/inf (f64).
    fn is_valid(self) -> bool;
    fn is_zero(self) -> bool;
    /// Threshold below which a pivot counts as zero, relative to the largest
    /// absolute entry of the matrix (0 for exact arithmetic).
    fn pivot_rel_tol() -> f64;
}

impl Scalar for f64 {
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    fn from_usize(n: usize) -> Self {
        n as f64
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn is_valid(self) -> bool {
        self.is_finite()
    }
    fn is_zero(self) -> bool {
        self == 0.0
    }
    fn pivot_rel_tol() -> f64 {
        1e-13
    }
}

/// Exact fraction `num/den` over `i128`, always reduced with `den > 0`.
///
/// Arithmetic is checked: an overflow (or a division by zero) yields the
/// *invalid* value (`den == 0`), which propagates through every later
/// operation and is reported by the solver as [`LinalgError::Overflow`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rational {
    num: i128,
    den: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

impl Rational {
    const INVALID: Rational = Rational { num: 0, den: 0 };

    /// `num/den`, reduced. `den == 0` gives the invalid value.
    pub fn new(num: i128, den: i128) -> Rational {
        if den == 0 || num == i128::MIN || den == i128::MIN {
            return Self::INVALID;
        }
        let g = gcd(num, den).max(1);
        let (mut n, mut d) = (num / g, den / g);
        if d < 0 {
            n = -n;
            d = -d;
        }
        Rational { num: n, den: d }
    }
    pub fn numer(self) -> i128 {
        self.num
    }
    pub fn denom(self) -> i128 {
        self.den
    }
}

impl fmt::Debug for Rational {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 0 {
            write!(f, "<overflow>")
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}
impl fmt::Display for Rational {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl Add for Rational {
    type Output = Rational;
    fn add(self, o: Rational) -> Rational {
        if self.den == 0 || o.den == 0 {
            return Rational::INVALID;
        }
        let g = gcd(self.den, o.den);
        let (a, b) = (self.den / g, o.den / g);
        let n1 = self.num.checked_mul(b);
        let n2 = o.num.checked_mul(a);
        let d = self.den.checked_mul(b);
        match (n1, n2, d) {
            (Some(n1), Some(n2), Some(d)) => match n1.checked_add(n2) {
                Some(n) => Rational::new(n, d),
                None => Rational::INVALID,
            },
            _ => Rational::INVALID,
        }
    }
}
impl Neg for Rational {
    type Output = Rational;
    fn neg(self) -> Rational {
        if self.den == 0 {
            return self;
        }
        Rational {
            num: -self.num,
            den: self.den,
        }
    }
}
impl Sub for Rational {
    type Output = Rational;
    fn sub(self, o: Rational) -> Rational {
        self + (-o)
    }
}
impl Mul for Rational {
    type Output = Rational;
    fn mul(self, o: Rational) -> Rational {
        if self.den == 0 || o.den == 0 {
            return Rational::INVALID;
        }
        // Cross-cancel first to keep the numbers small.
        let g1 = gcd(self.num, o.den).max(1);
        let g2 = gcd(o.num, self.den).max(1);
        let n = (self.num / g1).checked_mul(o.num / g2);
        let d = (self.den / g2).checked_mul(o.den / g1);
        match (n, d) {
            (Some(n), Some(d)) => Rational::new(n, d),
            _ => Rational::INVALID,
        }
    }
}
impl Div for Rational {
    type Output = Rational;
    fn div(self, o: Rational) -> Rational {
        if o.den == 0 || o.num == 0 {
            return Rational::INVALID;
        }
        self * Rational {
            num: o.den * o.num.signum(),
            den: o.num.abs(),
        }
    }
}

impl Scalar for Rational {
    fn zero() -> Self {
        Rational { num: 0, den: 1 }
    }
    fn one() -> Self {
        Rational { num: 1, den: 1 }
    }
    fn from_f64(x: f64) -> Self {
        if !x.is_finite() {
            return Rational::INVALID;
        }
        if x == 0.0 {
            return Self::zero();
        }
        // x = mantissa * 2^exp exactly.
        let bits = x.to_bits();
        let sign: i128 = if bits >> 63 == 0 { 1 } else { -1 };
        let exp_bits = ((bits >> 52) & 0x7ff) as i32;
        let frac = (bits & ((1u64 << 52) - 1)) as i128;
        let (mant, exp) = if exp_bits == 0 {
            (frac, -1074)
        } else {
            (frac | (1i128 << 52), exp_bits - 1075)
        };
        let tz = mant.trailing_zeros() as i32;
        let (mant, exp) = (mant >> tz, exp + tz);
        if exp >= 0 {
            if exp > 70 {
                return Rational::INVALID;
            }
            Rational::new(sign * (mant << exp), 1)
        } else {
            if -exp > 120 {
                return Rational::INVALID;
            }
            Rational::new(sign * mant, 1i128 << (-exp))
        }
    }
    fn from_usize(n: usize) -> Self {
        Rational::new(n as i128, 1)
    }
    fn to_f64(self) -> f64 {
        if self.den == 0 {
            f64::NAN
        } else {
            self.num as f64 / self.den as f64
        }
    }
    fn is_valid(self) -> bool {
        self.den != 0
    }
    fn is_zero(self) -> bool {
        self.den != 0 && self.num == 0
    }
    fn pivot_rel_tol() -> f64 {
        0.0
    }
}

/// Errors of the dense solver.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LinalgError {
    /// No usable pivot in column `column` (0-based, in the original order).
    #[error("singular or near-singular matrix (no pivot in column {column} of {n})")]
    Singular { column: usize, n: usize },
    /// Exact arithmetic overflowed `i128`, or `f64` produced NaN/inf.
    #[error("numeric overflow in the linear solve")]
    Overflow,
    #[error("dimension mismatch: {0}")]
    Dimension(String),
}

/// Row-major dense square matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseMatrix<T> {
    pub n: usize,
    pub data: Vec<T>,
}

impl<T: Scalar> DenseMatrix<T> {
    pub fn zeros(n: usize) -> Self {
        DenseMatrix {
            n,
            data: vec![T::zero(); n * n],
        }
    }
    pub fn identity(n: usize) -> Self {
        let mut m = Self::zeros(n);
        for i in 0..n {
            m.data[i * n + i] = T::one();
        }
        m
    }
    #[inline]
    pub fn get(&self, i: usize, j: usize) -> T {
        self.data[i * self.n + j]
    }
    #[inline]
    pub fn set(&mut self, i: usize, j: usize, v: T) {
        self.data[i * self.n + j] = v;
    }
    #[inline]
    pub fn add_to(&mut self, i: usize, j: usize, v: T) {
        let k = i * self.n + j;
        self.data[k] = self.data[k] + v;
    }
    pub fn transpose(&self) -> Self {
        let mut t = Self::zeros(self.n);
        for i in 0..self.n {
            for j in 0..self.n {
                t.set(j, i, self.get(i, j));
            }
        }
        t
    }
}

/// LU factorization `P·A = L·U` with partial pivoting.
#[derive(Clone, Debug)]
pub struct Lu<T> {
    lu: DenseMatrix<T>,
    perm: Vec<usize>,
}

impl<T: Scalar> Lu<T> {
    /// Factorize; fails on a (near-)singular matrix or overflow.
    pub fn factor(mut a: DenseMatrix<T>) -> Result<Self, LinalgError> {
        let n = a.n;
        if a.data.len() != n * n {
            return Err(LinalgError::Dimension(format!(
                "matrix of order {n} has {} entries",
                a.data.len()
            )));
        }
        let scale = a
            .data
            .iter()
            .map(|x| x.to_f64().abs())
            .fold(0.0f64, f64::max);
        if !scale.is_finite() || a.data.iter().any(|x| !x.is_valid()) {
            return Err(LinalgError::Overflow);
        }
        let tol = T::pivot_rel_tol() * scale;
        let mut perm: Vec<usize> = (0..n).collect();
        for k in 0..n {
            // Choose the pivot row.
            let mut best = k;
            let mut best_mag = -1.0f64;
            for i in k..n {
                let v = a.get(i, k);
                if v.is_zero() {
                    continue;
                }
                let m = v.to_f64().abs();
                if m > best_mag {
                    best_mag = m;
                    best = i;
                }
            }
            if best_mag < 0.0 || best_mag <= tol {
                return Err(LinalgError::Singular { column: k, n });
            }
            if best != k {
                for j in 0..n {
                    a.data.swap(k * n + j, best * n + j);
                }
                perm.swap(k, best);
            }
            let p = a.get(k, k);
            for i in (k + 1)..n {
                let f = a.get(i, k);
                if f.is_zero() {
                    continue;
                }
                let f = f / p;
                a.set(i, k, f);
                for j in (k + 1)..n {
                    let u = a.get(k, j);
                    if !u.is_zero() {
                        let v = a.get(i, j) - f * u;
                        a.set(i, j, v);
                    }
                }
            }
        }
        if a.data.iter().any(|x| !x.is_valid()) {
            return Err(LinalgError::Overflow);
        }
        Ok(Lu { lu: a, perm })
    }

    pub fn order(&self) -> usize {
        self.lu.n
    }

    /// Diagonal entry `(A⁻¹)_jj` without forming the inverse: forward
    /// substitution of the permuted unit vector starts at its non-zero and the
    /// back substitution stops at row `j` (about a third of a full solve).
    pub fn inverse_diagonal_entry(&self, j: usize) -> Result<T, LinalgError> {
        let n = self.lu.n;
        if j >= n {
            return Err(LinalgError::Dimension(format!("index {j} >= order {n}")));
        }
        // (P e_j)_i = e_j[perm[i]] -> 1 at the position k with perm[k] = j.
        let k = self.perm.iter().position(|&p| p == j).unwrap_or(j);
        let mut y = vec![T::zero(); n];
        y[k] = T::one();
        for i in (k + 1)..n {
            let mut s = T::zero();
            for (c, yc) in y.iter().enumerate().take(i).skip(k) {
                let l = self.lu.get(i, c);
                if !l.is_zero() && !yc.is_zero() {
                    s = s - l * *yc;
                }
            }
            y[i] = s;
        }
        for i in (j..n).rev() {
            let mut s = y[i];
            for (c, yc) in y.iter().enumerate().skip(i + 1) {
                let u = self.lu.get(i, c);
                if !u.is_zero() {
                    s = s - u * *yc;
                }
            }
            y[i] = s / self.lu.get(i, i);
        }
        if !y[j].is_valid() {
            return Err(LinalgError::Overflow);
        }
        Ok(y[j])
    }

    /// Solve `A x = b`.
    pub fn solve(&self, b: &[T]) -> Result<Vec<T>, LinalgError> {
        let n = self.lu.n;
        if b.len() != n {
            return Err(LinalgError::Dimension(format!(
                "right-hand side has {} entries, matrix order {n}",
                b.len()
            )));
        }
        let mut x: Vec<T> = self.perm.iter().map(|&p| b[p]).collect();
        for i in 0..n {
            let mut s = x[i];
            for (j, xj) in x.iter().enumerate().take(i) {
                let l = self.lu.get(i, j);
                if !l.is_zero() {
                    s = s - l * *xj;
                }
            }
            x[i] = s;
        }
        for i in (0..n).rev() {
            let mut s = x[i];
            for (j, xj) in x.iter().enumerate().skip(i + 1) {
                let u = self.lu.get(i, j);
                if !u.is_zero() {
                    s = s - u * *xj;
                }
            }
            x[i] = s / self.lu.get(i, i);
        }
        if x.iter().any(|v| !v.is_valid()) {
            return Err(LinalgError::Overflow);
        }
        Ok(x)
    }

    /// Solve `Aᵀ x = b`.
    pub fn solve_transpose(&self, b: &[T]) -> Result<Vec<T>, LinalgError> {
        let n = self.lu.n;
        if b.len() != n {
            return Err(LinalgError::Dimension(format!(
                "right-hand side has {} entries, matrix order {n}",
                b.len()
            )));
        }
        // P A = L U  =>  Aᵀ Pᵀ = Uᵀ Lᵀ ; solve Uᵀ y = b, Lᵀ z = y, x = Pᵀ z.
        let mut y = b.to_vec();
        for i in 0..n {
            let mut s = y[i];
            for (j, yj) in y.iter().enumerate().take(i) {
                let u = self.lu.get(j, i);
                if !u.is_zero() {
                    s = s - u * *yj;
                }
            }
            y[i] = s / self.lu.get(i, i);
        }
        for i in (0..n).rev() {
            let mut s = y[i];
            for (j, yj) in y.iter().enumerate().skip(i + 1) {
                let l = self.lu.get(j, i);
                if !l.is_zero() {
                    s = s - l * *yj;
                }
            }
            y[i] = s;
        }
        let mut x = vec![T::zero(); n];
        for (k, &p) in self.perm.iter().enumerate() {
            x[p] = y[k];
        }
        if x.iter().any(|v| !v.is_valid()) {
            return Err(LinalgError::Overflow);
        }
        Ok(x)
    }
}

/// Solve `A x = b` in one call.
pub fn solve_dense<T: Scalar>(a: DenseMatrix<T>, b: &[T]) -> Result<Vec<T>, LinalgError> {
    Lu::factor(a)?.solve(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: i128, d: i128) -> Rational {
        Rational::new(n, d)
    }

    #[test]
    fn rational_arithmetic_is_exact_and_reduced() {
        assert_eq!(r(1, 3) + r(1, 6), r(1, 2));
        assert_eq!(r(2, 4).numer(), 1);
        assert_eq!(r(1, -2), r(-1, 2));
        assert_eq!(r(3, 7) * r(7, 3), Rational::one());
        assert_eq!(r(1, 2) / r(1, 4), r(2, 1));
        assert_eq!(r(1, 2) - r(1, 2), Rational::zero());
        assert!(!(r(1, 2) / Rational::zero()).is_valid());
        let big = r(i128::MAX / 2, 1);
        assert!(!(big * big).is_valid());
        assert!(!(big * big + r(1, 1)).is_valid());
    }

    #[test]
    fn rational_from_f64_is_exact_for_dyadics() {
        assert_eq!(Rational::from_f64(0.5), r(1, 2));
        assert_eq!(Rational::from_f64(-3.0), r(-3, 1));
        assert_eq!(Rational::from_f64(0.375), r(3, 8));
        assert_eq!(Rational::from_f64(0.0), Rational::zero());
        // 0.1 is not 1/10 in binary; it is the exact dyadic 3602879701896397/2^55.
        assert_eq!(
            Rational::from_f64(0.1),
            r(3602879701896397, 36028797018963968)
        );
        assert!(!Rational::from_f64(f64::NAN).is_valid());
    }

    #[test]
    fn lu_solves_and_transposed_solves() {
        // A = [[2,1,0],[1,3,1],[0,1,4]]; x = [1,2,3] -> b = [4,10,14].
        let mut a = DenseMatrix::<Rational>::zeros(3);
        let vals = [[2, 1, 0], [1, 3, 1], [0, 1, 4]];
        for (i, row) in vals.iter().enumerate() {
            for (j, v) in row.iter().enumerate() {
                a.set(i, j, r(*v, 1));
            }
        }
        let lu = Lu::factor(a.clone()).unwrap();
        let x = lu.solve(&[r(4, 1), r(10, 1), r(14, 1)]).unwrap();
        assert_eq!(x, vec![r(1, 1), r(2, 1), r(3, 1)]);
        // Non-symmetric case for the transpose: B = [[0,1],[2,3]] needs a pivot swap.
        let mut b = DenseMatrix::<f64>::zeros(2);
        b.set(0, 1, 1.0);
        b.set(1, 0, 2.0);
        b.set(1, 1, 3.0);
        let lu = Lu::factor(b).unwrap();
        // Bᵀ = [[0,2],[1,3]]; Bᵀ x = [4, 5] -> x = [-1, 2].
        let x = lu.solve_transpose(&[4.0, 5.0]).unwrap();
        assert!((x[0] + 1.0).abs() < 1e-15 && (x[1] - 2.0).abs() < 1e-15);
        // B⁻¹ = [[-3/2, 1/2], [1, 0]].
        assert!((lu.inverse_diagonal_entry(0).unwrap() + 1.5).abs() < 1e-15);
        assert!(lu.inverse_diagonal_entry(1).unwrap().abs() < 1e-15);
        assert!(lu.inverse_diagonal_entry(2).is_err());
        let x = lu.solve(&[1.0, 3.0]).unwrap(); // B x = [1,3] -> x = [0, 1]
        assert!(x[0].abs() < 1e-15 && (x[1] - 1.0).abs() < 1e-15);
    }

    #[test]
    fn singular_matrix_is_reported() {
        let mut a = DenseMatrix::<f64>::zeros(2);
        a.set(0, 0, 1.0);
        a.set(0, 1, 2.0);
        a.set(1, 0, 2.0);
        a.set(1, 1, 4.0);
        assert!(matches!(
            Lu::factor(a),
            Err(LinalgError::Singular { column: 1, n: 2 })
        ));
    }
}

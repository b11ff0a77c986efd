//! Storage over fixed-width tuples and the join executor.

use std::cell::{OnceCell, Ref};
use std::cmp::Ordering;

use datafrog::{Iteration, Relation, Variable};

use crate::ast::{BinOp, CmpOp};
use crate::program::{Act, CExpr, Plan, Step, SIGN};
use crate::{ColumnType, MAX_ARITY};

/// A datafrog variable over `[u32; N]` tuples, viewed through flat `u32` slices.
pub(crate) trait DynVar {
    fn recent(&self) -> Ref<'_, [u32]>;
    fn stable(&self) -> Vec<Ref<'_, [u32]>>;
    /// Add rows (flat, row-major); they are sorted and deduplicated.
    fn insert_flat(&self, flat: &[u32]);
    /// Add rows of `flat` with columns reordered: new column `i` is old column `perm[i]`.
    fn insert_permuted(&self, flat: &[u32], perm: &[usize]);
    fn complete_flat(self: Box<Self>) -> Vec<u32>;
}

struct Var<const N: usize>(Variable<[u32; N]>);

fn rows_of<const N: usize>(flat: &[u32]) -> Vec<[u32; N]> {
    flat.chunks_exact(N)
        .map(|c| {
            let mut a = [0u32; N];
            a.copy_from_slice(c);
            a
        })
        .collect()
}

fn sorted_relation<const N: usize>(mut rows: Vec<[u32; N]>) -> Relation<[u32; N]> {
    let keep = sort_dedup_rows(&mut rows);
    rows.truncate(keep);
    Relation { elements: rows }
}

/// Sort rows lexicographically (no-op if already sorted).
///
/// Large inputs whose columns' value ranges fit in 64 bits together are sorted as packed
/// `u64` keys, which is several times faster than comparing arrays.
#[cfg(test)]
pub(crate) fn sort_rows<const N: usize>(rows: &mut [[u32; N]]) {
    if rows.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    if rows.len() < 1 << 15 || sort_packed(rows, false).is_none() {
        rows.sort_unstable();
    }
}

/// Sort rows lexicographically and move the distinct ones to the front; returns how many
/// there are (the rest of `rows` is unspecified).
pub(crate) fn sort_dedup_rows<const N: usize>(rows: &mut [[u32; N]]) -> usize {
    // One pass: already sorted (inputs usually are), and are there duplicates?
    let mut sorted = true;
    let mut dup = false;
    for w in rows.windows(2) {
        match w[0].cmp(&w[1]) {
            Ordering::Less => {}
            Ordering::Equal => dup = true,
            Ordering::Greater => {
                sorted = false;
                break;
            }
        }
    }
    if sorted {
        return if dup { dedup_sorted(rows) } else { rows.len() };
    }
    if rows.len() >= 1 << 15 {
        if let Some(keep) = sort_packed(rows, true) {
            return keep;
        }
    }
    rows.sort_unstable();
    dedup_sorted(rows)
}

/// Moves the distinct rows of sorted `rows` to the front; returns how many there are.
fn dedup_sorted<const N: usize>(rows: &mut [[u32; N]]) -> usize {
    if rows.is_empty() {
        return 0;
    }
    let mut w = 0;
    for i in 1..rows.len() {
        if rows[i] != rows[w] {
            w += 1;
            rows[w] = rows[i];
        }
    }
    w + 1
}

/// Sort via packed keys `(row[0] - min0) ++ (row[1] - min1) ++ ...` (each column in just
/// enough bits for its range). With `dedup`, equal rows are written once, at the front.
/// Returns the number of rows written (all of them without `dedup`), or `None` (rows
/// untouched) if the key needs more than 64 bits.
fn sort_packed<const N: usize>(rows: &mut [[u32; N]], dedup: bool) -> Option<usize> {
    let mut min = [u32::MAX; N];
    let mut max = [0u32; N];
    for r in rows.iter() {
        for c in 0..N {
            min[c] = min[c].min(r[c]);
            max[c] = max[c].max(r[c]);
        }
    }
    let mut bits = [0u32; N];
    let mut total = 0;
    for c in 0..N {
        bits[c] = 32 - (max[c] - min[c]).leading_zeros();
        total += bits[c];
    }
    if total > 64 {
        return None;
    }
    let key = |r: &[u32; N]| {
        let mut k = 0u64;
        for c in 0..N {
            // bits[c] <= 32, so the shift is in range.
            k = (k << bits[c]) | u64::from(r[c] - min[c]);
        }
        k
    };
    let keys = sorted_keys(rows.len(), total, |i| key(&rows[i]));
    let mut w = 0;
    for (i, &k) in keys.iter().enumerate() {
        if dedup && i > 0 && k == keys[i - 1] {
            continue;
        }
        let r = &mut rows[w];
        let mut k = k;
        for c in (0..N).rev() {
            let mask = (1u64 << bits[c]) - 1;
            r[c] = (k & mask) as u32 + min[c];
            k >>= bits[c];
        }
        w += 1;
    }
    Some(w)
}

/// The keys `key(0), ..., key(n - 1)` (each below `2^bits`), sorted.
///
/// Many keys are distributed by their top `log2(n) - 1` bits into buckets of about two to
/// four keys each (one counting pass and one scatter pass over the rows, computing the keys
/// on the fly; the counters fit in the last-level cache where a pass over the keys does
/// not), and each bucket is then sorted by insertion (small buckets) or by
/// [`radix_sort_lsd`] (large ones, from skewed keys). Few keys use `sort_unstable`.
fn sorted_keys(n: usize, bits: u32, key: impl Fn(usize) -> u64) -> Vec<u64> {
    if n < 1 << 16 || bits == 0 || n >= u32::MAX as usize {
        let mut keys: Vec<u64> = (0..n).map(&key).collect();
        radix_sort_lsd(&mut keys, bits);
        return keys;
    }
    let d = (n.ilog2() - 1).min(bits);
    let shift = bits - d;
    let buckets = 1usize << d;
    // ends[b]: first the number of keys in bucket b, then (prefix sums) where it starts in
    // the output, then (after the scatter) where it ends.
    let mut ends = vec![0u32; buckets];
    for i in 0..n {
        ends[(key(i) >> shift) as usize] += 1;
    }
    let mut sum = 0;
    for e in ends.iter_mut() {
        let c = *e;
        *e = sum;
        sum += c;
    }
    let mut out: Vec<u64> = vec![0; n];
    for i in 0..n {
        let k = key(i);
        let b = (k >> shift) as usize;
        out[ends[b] as usize] = k;
        ends[b] += 1;
    }
    let mut s = 0;
    for &e in &ends {
        let (start, end) = (s, e as usize);
        s = end;
        if end - start < 2 {
            continue;
        }
        let g = &mut out[start..end];
        if g.len() <= 32 {
            for i in 1..g.len() {
                let x = g[i];
                let mut j = i;
                while j > 0 && g[j - 1] > x {
                    g[j] = g[j - 1];
                    j -= 1;
                }
                g[j] = x;
            }
        } else if g.len() < 1 << 16 {
            g.sort_unstable();
        } else {
            // Skewed keys: the bucket shares its top bits, so sort by the others.
            let mut v = g.to_vec();
            radix_sort_lsd(&mut v, shift);
            g.copy_from_slice(&v);
        }
    }
    out
}

/// Sort `keys` whose values are below `2^bits`: LSD radix sort with digits of up to 11 bits
/// (all histograms counted in one pass) for large inputs, `sort_unstable` otherwise.
fn radix_sort_lsd(keys: &mut Vec<u64>, bits: u32) {
    const MAX_DIGIT: u32 = 11;
    if keys.len() < 1 << 16 {
        keys.sort_unstable();
        return;
    }
    let passes = bits.div_ceil(MAX_DIGIT).max(1) as usize;
    let digit = bits.div_ceil(passes as u32).max(1);
    let radix = 1usize << digit;
    let mask = (radix - 1) as u64;
    let mut counts = vec![0usize; radix * passes];
    for &k in keys.iter() {
        for p in 0..passes {
            counts[p * radix + ((k >> (p as u32 * digit)) & mask) as usize] += 1;
        }
    }
    let mut tmp: Vec<u64> = vec![0; keys.len()];
    let mut src: &mut Vec<u64> = keys;
    let mut dst: &mut Vec<u64> = &mut tmp;
    let mut swapped = false;
    let len = src.len();
    for p in 0..passes {
        let c = &mut counts[p * radix..(p + 1) * radix];
        if c.contains(&len) {
            continue; // all keys share this digit
        }
        let mut sum = 0;
        for x in c.iter_mut() {
            let v = *x;
            *x = sum;
            sum += v;
        }
        let shift = p as u32 * digit;
        for &k in src.iter() {
            let d = ((k >> shift) & mask) as usize;
            dst[c[d]] = k;
            c[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
        swapped = !swapped;
    }
    if swapped {
        // The sorted keys are in `tmp`.
        std::mem::swap(keys, &mut tmp);
    }
}

impl<const N: usize> DynVar for Var<N> {
    fn recent(&self) -> Ref<'_, [u32]> {
        Ref::map(self.0.recent.borrow(), |r| r.elements.as_flattened())
    }
    fn stable(&self) -> Vec<Ref<'_, [u32]>> {
        let n = self.0.stable.borrow().len();
        (0..n)
            .map(|k| Ref::map(self.0.stable.borrow(), |v| v[k].elements.as_flattened()))
            .collect()
    }
    fn insert_flat(&self, flat: &[u32]) {
        if !flat.is_empty() {
            self.0.insert(sorted_relation(rows_of::<N>(flat)));
        }
    }
    fn insert_permuted(&self, flat: &[u32], perm: &[usize]) {
        if flat.is_empty() {
            return;
        }
        let rows: Vec<[u32; N]> = flat
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u32; N];
                for (i, &p) in perm.iter().enumerate() {
                    a[i] = c[p];
                }
                a
            })
            .collect();
        self.0.insert(sorted_relation(rows));
    }
    fn complete_flat(self: Box<Self>) -> Vec<u32> {
        self.0.complete().elements.into_flattened()
    }
}

macro_rules! dispatch_arity {
    ($arity:expr, $n:ident => $body:expr, $fallback:expr) => {
        match $arity {
            1 => {
                const $n: usize = 1;
                $body
            }
            2 => {
                const $n: usize = 2;
                $body
            }
            3 => {
                const $n: usize = 3;
                $body
            }
            4 => {
                const $n: usize = 4;
                $body
            }
            5 => {
                const $n: usize = 5;
                $body
            }
            6 => {
                const $n: usize = 6;
                $body
            }
            7 => {
                const $n: usize = 7;
                $body
            }
            8 => {
                const $n: usize = 8;
                $body
            }
            9 => {
                const $n: usize = 9;
                $body
            }
            10 => {
                const $n: usize = 10;
                $body
            }
            11 => {
                const $n: usize = 11;
                $body
            }
            12 => {
                const $n: usize = 12;
                $body
            }
            _ => $fallback,
        }
    };
}

const _: () = assert!(MAX_ARITY == 12);

/// A new datafrog variable for tuples of `arity` columns (1..=MAX_ARITY).
pub(crate) fn make_var(it: &mut Iteration, arity: usize, name: &str) -> Option<Box<dyn DynVar>> {
    dispatch_arity!(arity, N => Some(Box::new(Var::<N>(it.variable::<[u32; N]>(name))) as Box<dyn DynVar>), None)
}

fn sort_dedup_n<const N: usize>(flat: &mut Vec<u32>) {
    let (rows, _) = flat.as_chunks_mut::<N>();
    let keep = sort_dedup_rows(rows) * N;
    flat.truncate(keep);
}

/// Sort rows (in place) lexicographically and remove duplicates.
pub(crate) fn sort_dedup(arity: usize, flat: &mut Vec<u32>) {
    dispatch_arity!(arity, N => sort_dedup_n::<N>(flat), ())
}

fn permute_n<const N: usize>(flat: &[u32], perm: &[usize]) -> Vec<u32> {
    let rows: Vec<[u32; N]> = flat
        .chunks_exact(N)
        .map(|c| {
            let mut a = [0u32; N];
            for (i, &p) in perm.iter().enumerate() {
                a[i] = c[p];
            }
            a
        })
        .collect();
    sorted_relation(rows).elements.into_flattened()
}

/// A sorted copy of `flat` with columns reordered by `perm`.
pub(crate) fn permuted_index(arity: usize, flat: &[u32], perm: &[usize]) -> Vec<u32> {
    dispatch_arity!(arity, N => permute_n::<N>(flat, perm), flat.to_vec())
}

/// Evaluate binary arithmetic in the internal encoding. `None` on division by zero.
#[inline]
fn arith(op: BinOp, ty: ColumnType, x: u32, y: u32) -> Option<u32> {
    if ty == ColumnType::Number {
        let a = (x ^ SIGN) as i32;
        let b = (y ^ SIGN) as i32;
        let r = match op {
            BinOp::Add => a.wrapping_add(b),
            BinOp::Sub => a.wrapping_sub(b),
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div => a
                .checked_div(b)
                .or_else(|| (b != 0).then(|| a.wrapping_div(b)))?,
            BinOp::Rem => a.checked_rem(b).or_else(|| (b != 0).then_some(0))?,
        };
        Some((r as u32) ^ SIGN)
    } else {
        Some(match op {
            BinOp::Add => x.wrapping_add(y),
            BinOp::Sub => x.wrapping_sub(y),
            BinOp::Mul => x.wrapping_mul(y),
            BinOp::Div => x.checked_div(y)?,
            BinOp::Rem => x.checked_rem(y)?,
        })
    }
}

#[inline]
fn eval(e: &CExpr, env: &[u32]) -> Option<u32> {
    match e {
        CExpr::Slot(s) => Some(env[*s]),
        CExpr::Bin(op, ty, a, b) => {
            let x = eval(a, env)?;
            let y = eval(b, env)?;
            arith(*op, *ty, x, y)
        }
    }
}

#[inline]
fn compare(op: CmpOp, x: u32, y: u32) -> bool {
    match op {
        CmpOp::Lt => x < y,
        CmpOp::Le => x <= y,
        CmpOp::Gt => x > y,
        CmpOp::Ge => x >= y,
        CmpOp::Eq => x == y,
        CmpOp::Ne => x != y,
    }
}

/// First index in `lo..hi` where `pred` is false (`pred` must be monotone: true, then false),
/// found by galloping from `lo`.
#[inline]
fn gallop(mut lo: usize, hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    if lo >= hi || !pred(lo) {
        return lo;
    }
    let mut step = 1;
    while lo + step < hi && pred(lo + step) {
        lo += step;
        step <<= 1;
    }
    let mut l = lo + 1;
    let mut h = (lo + step).min(hi);
    while l < h {
        let m = l + (h - l) / 2;
        if pred(m) {
            l = m + 1;
        } else {
            h = m;
        }
    }
    l
}

/// First index in `lo..hi` where `pred` is false, by binary search.
#[inline]
fn bsearch(mut lo: usize, mut hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let m = lo + (hi - lo) / 2;
        if pred(m) {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    lo
}

#[inline(always)]
fn cmp_prefix(row: &[u32], key: &[u32]) -> Ordering {
    for (a, b) in row.iter().zip(key) {
        match a.cmp(b) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    Ordering::Equal
}

/// Rows per block of a [`summary`].
const BLOCK: usize = 16;

/// The first column of every `BLOCK`-th row of sorted `rows` (stride `n`): a small,
/// cache-resident index that turns a random lookup into one short search.
pub(crate) fn summary(rows: &[u32], n: usize) -> Vec<u32> {
    if rows.len() / n.max(1) < 4 * BLOCK {
        return Vec::new();
    }
    rows.chunks_exact(n).step_by(BLOCK).map(|r| r[0]).collect()
}

/// A sorted batch of rows and its (possibly empty) [`summary`].
#[derive(Clone, Copy)]
pub(crate) struct Batch<'a> {
    pub rows: &'a [u32],
    pub summary: &'a [u32],
    /// Number of rows (`rows.len() / arity`), precomputed to keep divisions out of lookups.
    pub count: usize,
}

impl<'a> Batch<'a> {
    pub fn new(rows: &'a [u32], summary: &'a [u32], arity: usize) -> Self {
        Batch {
            rows,
            summary,
            count: rows.len() / arity.max(1),
        }
    }
}

/// Open-addressing hash table from each distinct key prefix (the first `b` columns) of a
/// sorted relation to the rows `start..end` that have it.
pub(crate) struct HashIndex {
    b: usize,
    n: usize,
    mask: usize,
    /// `[start, end)` row ranges; `start == u32::MAX` marks an empty slot.
    slots: Vec<[u32; 2]>,
}

#[inline(always)]
fn hash_key(key: &[u32]) -> usize {
    let mut h: u64 = 0x243F_6A88_85A3_08D3;
    for &x in key {
        h = (h ^ u64::from(x)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 29;
    }
    h as usize
}

impl HashIndex {
    /// The table of the `b`-column prefixes of sorted `rows` (stride `n`); `None` if the
    /// relation has too many rows for 32-bit row numbers.
    pub fn build(rows: &[u32], n: usize, b: usize) -> Option<HashIndex> {
        let count = rows.len() / n.max(1);
        if count >= u32::MAX as usize || b == 0 || b > n {
            return None;
        }
        // Count distinct prefixes to size the table (load factor <= 1/2).
        let mut distinct = 0usize;
        for r in 0..count {
            if r == 0 || rows[r * n..r * n + b] != rows[(r - 1) * n..(r - 1) * n + b] {
                distinct += 1;
            }
        }
        let cap = (distinct * 2).max(8).next_power_of_two();
        let mask = cap - 1;
        let mut slots = vec![[u32::MAX, 0]; cap];
        let mut start = 0usize;
        while start < count {
            let key = &rows[start * n..start * n + b];
            let mut end = start + 1;
            while end < count && &rows[end * n..end * n + b] == key {
                end += 1;
            }
            let mut h = hash_key(key) & mask;
            while slots[h][0] != u32::MAX {
                h = (h + 1) & mask;
            }
            slots[h] = [start as u32, end as u32];
            start = end;
        }
        Some(HashIndex { b, n, mask, slots })
    }

    /// Rows `start..end` of `rows` (the relation it was built from) whose prefix is `key`.
    #[inline]
    pub fn get(&self, rows: &[u32], key: &[u32]) -> (usize, usize) {
        debug_assert_eq!(key.len(), self.b);
        let n = self.n;
        let mut h = hash_key(key) & self.mask;
        loop {
            let [s, e] = self.slots[h];
            if s == u32::MAX {
                return (0, 0);
            }
            let s = s as usize;
            if rows[s * n..s * n + self.b]
                .iter()
                .zip(key)
                .all(|(a, b)| a == b)
            {
                return (s, e as usize);
            }
            h = (h + 1) & self.mask;
        }
    }
}

/// Rows `start..end` of sorted `batch` (stride `n`) whose first `key.len()` columns equal
/// `key`. `cursor` remembers the last start to gallop forward on ascending keys.
#[inline]
fn eq_range(batch: Batch, n: usize, key: &[u32], cursor: &mut usize) -> (usize, usize) {
    let rows_flat = batch.rows;
    let rows = batch.count;
    let b = key.len();
    if b == 0 {
        return (0, rows);
    }
    // One key column (the common case) is compared directly.
    let cmp = |r: usize| {
        if b == 1 {
            rows_flat[r * n].cmp(&key[0])
        } else {
            cmp_prefix(&rows_flat[r * n..r * n + b], key)
        }
    };
    let less = |r: usize| cmp(r) == Ordering::Less;
    let p = (*cursor).min(rows);
    // Fast paths of merge joins: the key's rows start at the cursor, or right after the
    // cursor's row (the previous key had one row).
    let at = if p < rows { cmp(p) } else { Ordering::Greater };
    let start = if at != Ordering::Less && (p == 0 || less(p - 1)) {
        p
    } else if at == Ordering::Less && (p + 1 == rows || !less(p + 1)) {
        p + 1
    } else if p == 0 || less(p - 1) {
        // Ascending keys: continue from the last position.
        if p >= rows || !less(p) {
            p
        } else if !batch.summary.is_empty() && p + 8 * BLOCK < rows && less(p + 8 * BLOCK) {
            // Far ahead: jump with the summary.
            let k = batch.summary.partition_point(|&s| s < key[0]);
            gallop((k.saturating_sub(1) * BLOCK).max(p), rows, less)
        } else {
            gallop(p, rows, less)
        }
    } else if p >= NEAR && !less(p - NEAR) {
        // Far behind: a global search.
        if !batch.summary.is_empty() {
            let k = batch.summary.partition_point(|&s| s < key[0]);
            gallop(k.saturating_sub(1) * BLOCK, rows, less)
        } else {
            bsearch(0, p, less)
        }
    } else {
        // A little behind (keys that go back and forth within a small region of the index):
        // search the last NEAR rows only.
        bsearch(p.saturating_sub(NEAR), p, less)
    };
    *cursor = start;
    let eq = |r: usize| cmp(r) == Ordering::Equal;
    let end = if start < rows && eq(start) {
        if start + 1 < rows && eq(start + 1) {
            gallop(start + 1, rows, eq)
        } else {
            start + 1
        }
    } else {
        start
    };
    (start, end)
}

/// Rows within which a lookup counts as near the cursor (see [`near_cursor`]).
const NEAR: usize = 32;

/// Whether the rows with prefix `key` start within `NEAR` rows of `cursor`, before or after
/// (so that searching from the cursor is cheaper than a hash lookup).
#[inline]
fn near_cursor(batch: Batch, n: usize, key: &[u32], cursor: usize) -> bool {
    let (rows, count) = (batch.rows, batch.count);
    let b = key.len();
    if count == 0 {
        return false;
    }
    let lo = cursor.saturating_sub(NEAR).min(count - 1);
    if cmp_prefix(&rows[lo * n..lo * n + b], key) == Ordering::Greater {
        return false;
    }
    let hi = (cursor + NEAR).min(count - 1);
    cmp_prefix(&rows[hi * n..hi * n + b], key) != Ordering::Less
}

pub(crate) struct Exec<'a> {
    pub plan: &'a Plan,
    /// Per step: the sorted batches it reads (scan: its view; negation: the complete index).
    pub data: Vec<Vec<Batch<'a>>>,
    cursor_base: Vec<usize>,
    /// Per (step, batch), like the cursors: a hash index built once the lookups far from the
    /// cursor have cost about as much as building it (see [`Exec::far_lookup`]).
    hashes: Vec<OnceCell<Option<HashIndex>>>,
    /// The head's slots when every head argument is a plain variable or constant.
    head_slots: Option<Vec<usize>>,
}

/// Key columns a [`Memo`] entry can hold.
const MEMO_KEY: usize = 3;
/// Entries of a [`Memo`] (a power of two).
const MEMO_SIZE: usize = 1 << MEMO_BITS;
/// log2 of [`MEMO_SIZE`].
const MEMO_BITS: u32 = 8;

/// A small direct-mapped cache of recent lookups of one hashed scan: key → rows
/// `start..end` (possibly empty). Lookups whose keys come in no useful order still tend to
/// repeat recent keys (the same statement or context over and over within a loop), and a
/// hit costs a few instructions on cache-resident memory instead of a search or a probe of
/// a large hash index.
struct Memo {
    /// `(key, start, end)`; `start == u32::MAX` marks an empty entry.
    entries: Box<[([u32; MEMO_KEY], u32, u32)]>,
}

impl Memo {
    fn new() -> Memo {
        Memo {
            entries: vec![([0; MEMO_KEY], u32::MAX, 0); MEMO_SIZE].into_boxed_slice(),
        }
    }

    #[inline(always)]
    fn slot(key: &[u32]) -> usize {
        let mut h: u32 = 0;
        for &x in key {
            h = (h ^ x).wrapping_mul(0x9E37_79B1);
        }
        (h >> (32 - MEMO_BITS)) as usize
    }

    #[inline(always)]
    fn get(&self, key: &[u32]) -> Option<(usize, usize)> {
        let (k, s, e) = &self.entries[Self::slot(key)];
        // An element-wise loop: slice equality would call `memcmp` for these few values.
        let same = key.iter().zip(k).all(|(a, b)| a == b);
        (*s != u32::MAX && same).then_some((*s as usize, *e as usize))
    }

    #[inline(always)]
    fn put(&mut self, key: &[u32], start: usize, end: usize) {
        let e = &mut self.entries[Self::slot(key)];
        e.0[..key.len()].copy_from_slice(key);
        e.1 = start as u32;
        e.2 = end as u32;
    }
}

pub(crate) struct State {
    env: Vec<u32>,
    cursors: Vec<usize>,
    /// Per (step, batch): lookups far from the cursor so far.
    far: Vec<usize>,
    /// Per (step, batch) of a hashed scan with at most [`MEMO_KEY`] key columns, created
    /// at the first lookup.
    memos: Vec<Option<Memo>>,
    /// Derived head rows, flat and row-major.
    pub out: Vec<u32>,
    pub div_by_zero: bool,
    /// `out` may hold at most this many values; past it `overflow` is set and the run stops.
    limit: usize,
    pub overflow: bool,
}

impl<'a> Exec<'a> {
    pub fn new(plan: &'a Plan, data: Vec<Vec<Batch<'a>>>) -> Self {
        let mut cursor_base = Vec::with_capacity(data.len());
        let mut n = 0;
        for d in &data {
            cursor_base.push(n);
            n += d.len();
        }
        cursor_base.push(n);
        Exec {
            plan,
            data,
            hashes: (0..n).map(|_| OnceCell::new()).collect(),
            cursor_base,
            head_slots: plan
                .head
                .iter()
                .map(|e| match e {
                    CExpr::Slot(s) => Some(*s),
                    CExpr::Bin(..) => None,
                })
                .collect(),
        }
    }

    /// Run the plan with constants `consts` (per constant id); derived head rows go to `out`.
    pub fn run(&self, consts: &[u32], out: Vec<u32>, limit: usize) -> State {
        let mut env = vec![0u32; self.plan.n_slots];
        for &(slot, id) in &self.plan.consts {
            env[slot] = consts[id];
        }
        let mut st = State {
            env,
            cursors: vec![0; *self.cursor_base.last().unwrap_or(&0)],
            far: vec![0; *self.cursor_base.last().unwrap_or(&0)],
            memos: (0..*self.cursor_base.last().unwrap_or(&0))
                .map(|_| None)
                .collect(),
            out,
            div_by_zero: false,
            limit,
            overflow: false,
        };
        self.step(&mut st, 0);
        st
    }

    /// Rows of `batch` with prefix `key`, for a key far from the cursor: by galloping search
    /// until the far lookups number a quarter of the batch's rows (a hash index costs about
    /// as much to build as that many searches), then from the batch's [`HashIndex`].
    #[inline]
    fn far_lookup(
        &self,
        st: &mut State,
        slot: usize,
        batch: Batch,
        n: usize,
        key: &[u32],
    ) -> (usize, usize) {
        let rows = batch.count;
        let hash = match self.hashes[slot].get() {
            Some(h) => h.as_ref(),
            None => {
                st.far[slot] += 1;
                if st.far[slot] > 1024 + rows / 4 {
                    self.hashes[slot]
                        .get_or_init(|| HashIndex::build(batch.rows, n, key.len()))
                        .as_ref()
                } else {
                    None
                }
            }
        };
        match hash {
            Some(h) => {
                let (s, e) = h.get(batch.rows, key);
                if s < e {
                    st.cursors[slot] = s;
                }
                (s, e)
            }
            None => eq_range(batch, n, key, &mut st.cursors[slot]),
        }
    }

    fn step(&self, st: &mut State, i: usize) {
        let Some(step) = self.plan.steps.get(i) else {
            let mut row = [0u32; MAX_ARITY];
            for (k, e) in self.plan.head.iter().enumerate() {
                if let CExpr::Slot(s) = e {
                    row[k] = st.env[*s];
                    continue;
                }
                match eval(e, &st.env) {
                    Some(v) => row[k] = v,
                    None => {
                        st.div_by_zero = true;
                        return;
                    }
                }
            }
            st.out.extend_from_slice(&row[..self.plan.head.len()]);
            st.overflow = st.out.len() > st.limit;
            return;
        };
        match step {
            Step::Filter(l, op, r) => {
                let (Some(x), Some(y)) = (eval(l, &st.env), eval(r, &st.env)) else {
                    st.div_by_zero = true;
                    return;
                };
                if compare(*op, x, y) {
                    self.step(st, i + 1);
                }
            }
            Step::Assign(slot, e) => {
                let Some(v) = eval(e, &st.env) else {
                    st.div_by_zero = true;
                    return;
                };
                st.env[*slot] = v;
                self.step(st, i + 1);
            }
            Step::Neg { arity, key, .. } => {
                let mut k = [0u32; MAX_ARITY];
                for (j, &s) in key.iter().enumerate() {
                    k[j] = st.env[s];
                }
                let mut found = false;
                let key = &k[..key.len()];
                for (bi, batch) in self.data[i].iter().enumerate() {
                    let slot = self.cursor_base[i] + bi;
                    if key.len() <= MEMO_KEY && batch.count < u32::MAX as usize {
                        // Keys of negations repeat like those of hashed scans.
                        let memo = st.memos[slot].get_or_insert_with(Memo::new);
                        let (s, e) = match memo.get(key) {
                            Some(r) => r,
                            None => {
                                let r = eq_range(*batch, *arity, key, &mut st.cursors[slot]);
                                memo.put(key, r.0, r.1);
                                r
                            }
                        };
                        if s < e {
                            found = true;
                            break;
                        }
                        continue;
                    }
                    let (s, e) = eq_range(*batch, *arity, key, &mut st.cursors[slot]);
                    if s < e {
                        found = true;
                        break;
                    }
                }
                if !found {
                    self.step(st, i + 1);
                }
            }
            Step::Scan(sc) => {
                let n = sc.arity;
                let b = sc.key.len();
                let mut k = [0u32; MAX_ARITY];
                for (j, &s) in sc.key.iter().enumerate() {
                    k[j] = st.env[s];
                }
                // Inclusive bounds on column `b` of the index.
                let mut lo = 0u32;
                let mut hi = u32::MAX;
                if let Some(r) = &sc.range {
                    for (e, strict) in &r.lower {
                        let Some(v) = eval(e, &st.env) else {
                            st.div_by_zero = true;
                            return;
                        };
                        if *strict {
                            match v.checked_add(1) {
                                Some(v) => lo = lo.max(v),
                                None => return,
                            }
                        } else {
                            lo = lo.max(v);
                        }
                    }
                    for (e, strict) in &r.upper {
                        let Some(v) = eval(e, &st.env) else {
                            st.div_by_zero = true;
                            return;
                        };
                        if *strict {
                            match v.checked_sub(1) {
                                Some(v) => hi = hi.min(v),
                                None => return,
                            }
                        } else {
                            hi = hi.min(v);
                        }
                    }
                    if lo > hi {
                        return;
                    }
                }
                for (bi, &bat) in self.data[i].iter().enumerate() {
                    let batch = bat.rows;
                    let rows = bat.count;
                    let (mut start, mut end) = if b == 0 {
                        (0, rows)
                    } else {
                        let slot = self.cursor_base[i] + bi;
                        let key = &k[..b];
                        if sc.hashed && b <= MEMO_KEY && bat.count < u32::MAX as usize {
                            let memo = st.memos[slot].get_or_insert_with(Memo::new);
                            match memo.get(key) {
                                Some(r) => r,
                                None => {
                                    let r = if near_cursor(bat, n, key, st.cursors[slot]) {
                                        eq_range(bat, n, key, &mut st.cursors[slot])
                                    } else {
                                        self.far_lookup(st, slot, bat, n, key)
                                    };
                                    if let Some(m) = st.memos[slot].as_mut() {
                                        m.put(key, r.0, r.1);
                                    }
                                    r
                                }
                            }
                        } else if sc.hashed && !near_cursor(bat, n, key, st.cursors[slot]) {
                            self.far_lookup(st, slot, bat, n, key)
                        } else {
                            eq_range(bat, n, key, &mut st.cursors[slot])
                        }
                    };
                    if sc.range.is_some() && start < end {
                        let col = |r: usize| batch[r * n + b];
                        start = bsearch(start, end, |r| col(r) < lo);
                        end = bsearch(start, end, |r| col(r) <= hi);
                    }
                    let last = i + 1 == self.plan.steps.len();
                    if let (true, Some(head)) = (last, &self.head_slots) {
                        // The innermost scan of a plain head: emit rows directly.
                        for r in start..end {
                            if bind_row(&mut st.env, &batch[r * n..r * n + n], &sc.actions) {
                                st.out.extend(head.iter().map(|&s| st.env[s]));
                            }
                        }
                        if st.out.len() > st.limit {
                            st.overflow = true;
                            return;
                        }
                        continue;
                    }
                    for r in start..end {
                        if !bind_row(&mut st.env, &batch[r * n..r * n + n], &sc.actions) {
                            continue;
                        }
                        self.step(st, i + 1);
                        if st.div_by_zero || st.overflow {
                            return;
                        }
                    }
                }
            }
        }
    }
}

/// Binds `row`'s columns into `env` as `actions` say; `false` as soon as a check fails.
#[inline(always)]
fn bind_row(env: &mut [u32], row: &[u32], actions: &[(usize, Act)]) -> bool {
    for &(c, ref act) in actions {
        match *act {
            Act::Bind(s) => env[s] = row[c],
            Act::Check(s) => {
                if env[s] != row[c] {
                    return false;
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_index_and_cursor_searches_find_every_prefix() {
        // Sorted rows of 3 columns with repeated (c0, c1) prefixes.
        let mut rows: Vec<[u32; 3]> = Vec::new();
        for a in 0..300u32 {
            for b in 0..(a % 5) {
                for c in 0..(1 + (a + b) % 3) {
                    rows.push([a * 3, b, c]);
                }
            }
        }
        rows.sort_unstable();
        let flat = rows.as_flattened();
        let summary = summary(flat, 3);
        let batch = Batch::new(flat, &summary, 3);
        let h = HashIndex::build(flat, 3, 2).unwrap();
        let naive = |k: &[u32]| {
            let s = rows.iter().position(|r| r[..2] == *k);
            s.map(|s| (s, s + rows[s..].iter().take_while(|r| r[..2] == *k).count()))
        };
        let mut cursor = 0;
        let mut x = 99u32;
        for step in 0..5_000u32 {
            // Keys near the cursor (both directions), far away, and absent.
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let a = if step % 3 == 0 {
                (x >> 8) % 920
            } else {
                (cursor / 2) as u32 % 920
            };
            let key = [a, (x >> 4) % 6];
            let e = eq_range(batch, 3, &key, &mut cursor);
            let got = (e.0 < e.1).then_some(e);
            assert_eq!(got, naive(&key), "eq_range {key:?}");
            let hg = h.get(flat, &key);
            assert_eq!((hg.0 < hg.1).then_some(hg), naive(&key), "hash {key:?}");
        }
    }

    #[test]
    fn memo_returns_only_what_was_put_for_the_same_key() {
        let mut m = Memo::new();
        assert_eq!(m.get(&[1, 2]), None);
        m.put(&[1, 2], 10, 12);
        m.put(&[7], 3, 3); // an empty range is remembered too
        assert_eq!(m.get(&[1, 2]), Some((10, 12)));
        assert_eq!(m.get(&[7]), Some((3, 3)));
        assert_eq!(m.get(&[1, 3]), None);
        assert_eq!(m.get(&[2, 1]), None);
        // Keys that share a slot replace each other; a lookup never returns another key's rows.
        let slot = Memo::slot(&[1, 2]);
        let other = (0u32..)
            .map(|x| [x, 5])
            .find(|k| Memo::slot(k) == slot)
            .unwrap();
        m.put(&other, 40, 41);
        assert_eq!(m.get(&other), Some((40, 41)));
        assert_eq!(m.get(&[1, 2]), None);
    }

    #[test]
    fn sorted_input_with_duplicates_is_deduplicated_in_place() {
        let mut rows: Vec<[u32; 2]> = (0..100_000u32).map(|i| [i / 3, i % 2]).collect();
        rows.sort_unstable();
        let mut expected = rows.clone();
        expected.dedup();
        let keep = sort_dedup_rows(&mut rows);
        assert_eq!(rows[..keep], expected[..]);
        let mut distinct = expected.clone();
        assert_eq!(sort_dedup_rows(&mut distinct), expected.len());
        assert_eq!(distinct, expected);
    }

    #[test]
    fn packed_sort_matches_comparison_sort() {
        let mut x = 12345u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m) as u32
        };
        // Small ranges (packed path), an offset range, and a wide range (fallback).
        for (range, offset) in [(1000u64, 0u32), (50, 0x8000_0000), (1 << 32, 0)] {
            let rows: Vec<[u32; 3]> = (0..70_000)
                .map(|_| {
                    [
                        next(range).wrapping_add(offset),
                        next(range),
                        next(3).wrapping_add(offset),
                    ]
                })
                .collect();
            let mut a = rows.clone();
            a.sort_unstable();
            let mut b = rows;
            sort_rows(&mut b);
            assert_eq!(a, b);
        }
        // Both the sort and the sort + dedup agree with the standard library.
        let check = |rows: Vec<[u32; 2]>| {
            let mut a = rows.clone();
            a.sort_unstable();
            let mut b = rows.clone();
            sort_rows(&mut b);
            assert_eq!(a, b);
            a.dedup();
            let mut c = rows;
            let keep = sort_dedup_rows(&mut c);
            assert_eq!(a, c[..keep]);
        };
        // Large enough for the radix sort (>= 65,536 keys), several digit widths.
        for (range, n) in [(1u64 << 20, 200_000), (3, 100_000), (1 << 32, 70_000)] {
            check((0..n).map(|_| [next(range), next(range)]).collect());
        }
        // Skewed keys: two values in the top column, so two huge buckets of the first
        // distribution pass (sorted by the LSD fallback), plus many duplicates.
        check(
            (0..300_000)
                .map(|_| [next(2) << 20, next(1 << 12)])
                .collect(),
        );
        let mut one: Vec<[u32; 1]> = (0..40_000).map(|i| [(i * 7919) % 40_000]).collect();
        sort_rows(&mut one);
        assert!(one.windows(2).all(|w| w[0] < w[1]));
    }
}

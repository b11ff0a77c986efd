//! Evaluation metrics: top-k, EXAM, rank scores, HT_Rank (seed 002).

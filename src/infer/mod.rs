//! Factor-graph inference (loopy BP with O(k) noisy-OR messages, exact enumeration for tests).
